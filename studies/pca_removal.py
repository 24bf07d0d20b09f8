"""Issue 10, item 8: D'Acquisto and Naldi's PCA removal on Tarragona and on images.

1. The utility curve on Tarragona: every metric of the framework paper after removing the
   r largest principal components (pca_removal_curve.csv).
2. Where the method lands next to FA, PCA, M-AGG and rank swapping (general protection,
   the dashboard's defaults, seed 12345, 10 runs): disclosure risk (mean of DBRL and ID),
   utility loss (mean of PIL and PS), the papers' scores, the share of runs meeting every
   risk floor and the largest share of records an intruder reconstructs
   (pca_removal_compare.csv; the risk-utility chart as pca_removal_risk_utility.png when
   chromium is installed).
3. The paper's Table I in kind: greyscale images shipped with scikit-image, the r = 1, 2, 5
   largest components of the pixel columns removed (centred, pixel units, clipped to
   0..255), SSIM as MATLAB's ssim (Gaussian window, sigma 1.5) and with sdccore's uniform
   7 x 7 window, PSNR with peak 255 (pca_removal_images.csv).  The paper: Lena, SSIM 0.9335 /
   0.9036 / 0.8614, PSNR 20.01 / 17.99 / 16.19 dB.

python studies/pca_removal.py   (about 40 s)
"""

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import sdccore  # noqa: E402
from sdccore._core import decomp as dc  # noqa: E402
from sdccore._methods import removal_kernel as rm  # noqa: E402

OUT = Path(__file__).resolve().parent / "output"
PAPER_TABLE_I = {1: (0.9335, 20.0081), 2: (0.9036, 17.9902), 5: (0.8614, 16.1854)}
CONFIGS = {"FA": {"method": "fa"}, "PCA": {"method": "pca"}, "M-AGG": {"method": "magg"},
           "Rank swap": {"method": "rankswap", "p": 40.0},
           "PCA-R stop": {"method": "pca_remove"},
           "PCA-R r=1": {"method": "pca_remove", "removed": 1},
           "PCA-R r=4": {"method": "pca_remove", "removed": 4}}


def curve(data):
    return sdccore.removal_curve(data).table


def comparison(data, reps):
    cmp_ = sdccore.compare(data, CONFIGS, reps=reps, rng=12345)
    ru = cmp_.risk_utility().set_index("config")
    tab = cmp_.table()
    safe = cmp_.safety().set_index("config")
    vr = cmp_.variable_risk().groupby("config").close_reconstructed.max()
    out = pd.DataFrame({"risk": ru.risk, "utility_loss": ru.utility_loss,
                        "dbrl": tab.dbrl, "id": tab.id, "pil": tab.pil, "ps": tab.ps, "ps_shape": tab.ps_shape,
                        "floors_met": safe.floors_met, "max_reconstructed": vr}).loc[list(CONFIGS)]
    return out, cmp_


def images(names=("camera", "astronaut", "coins", "moon")):
    import skimage.data
    from skimage.color import rgb2gray
    from skimage.metrics import peak_signal_noise_ratio, structural_similarity

    rows = []
    for name in names:
        im = getattr(skimage.data, name)()
        im = (rgb2gray(im) * 255.0 if im.ndim == 3 else im.astype(float))
        mu = im.mean(axis=0)
        Z = im - mu
        A, _ = dc.pca_decomposition(np.cov(Z, rowvar=False, bias=True))
        for r in (1, 2, 5):
            Y = np.clip(rm.removed_release(Z, A, r) + mu, 0, 255)
            rows.append({"image": name, "removed": r,
                         "ssim_matlab": structural_similarity(im, Y, data_range=255, gaussian_weights=True, sigma=1.5,
                                                              use_sample_covariance=False),
                         "ssim_7x7": structural_similarity(im, Y, data_range=255),
                         "psnr": peak_signal_noise_ratio(im, Y, data_range=255),
                         "paper_lena_ssim": PAPER_TABLE_I[r][0], "paper_lena_psnr": PAPER_TABLE_I[r][1]})
    return pd.DataFrame(rows)


def chart(cmp_, path):
    """The risk-utility chart of the Run page, as a PNG via chromium (skipped without it)."""
    import shutil
    import tempfile

    chromium = shutil.which("chromium")
    if not chromium:
        print("no chromium: chart not drawn")
        return
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from playwright.sync_api import sync_playwright

    from ui import figures

    fig = figures.risk_utility_figure(cmp_.risk_utility(), "runs")
    fig.update_layout(width=900, height=560, title="Tarragona, general protection: risk against utility loss "
                                                   "(whiskers: 2.5-97.5 % of runs)")
    with tempfile.TemporaryDirectory() as tmp:
        html = Path(tmp) / "chart.html"
        fig.write_html(html, include_plotlyjs=True, full_html=True)
        with sync_playwright() as p:
            b = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu",
                                                                  "--disable-background-networking",
                                                                  "--disable-component-update", "--no-first-run"])
            page = b.new_page(viewport={"width": 920, "height": 580})
            page.goto(html.as_uri())
            page.wait_for_selector(".main-svg")
            page.screenshot(path=str(path))
            b.close()


def main(reps=10, write=True, image_names=("camera", "astronaut", "coins", "moon")):
    t0 = time.perf_counter()
    data = sdccore.load_dataset("tarragona")
    c = curve(data)
    comp, cmp_ = comparison(data, reps)
    im = images(image_names)
    if not write:
        return c, comp, im
    OUT.mkdir(exist_ok=True)
    c.to_csv(OUT / "pca_removal_curve.csv", index=False)
    comp.to_csv(OUT / "pca_removal_compare.csv")
    im.to_csv(OUT / "pca_removal_images.csv", index=False)
    chart(cmp_, OUT / "pca_removal_risk_utility.png")
    pd.set_option("display.width", 200)
    print("Tarragona, utility after removing the r largest components:")
    print(c.round(4).to_string(index=False))
    print(f"\nTarragona, general protection, {reps} runs, seed 12345:")
    print(comp.round(4).to_string())
    print("\nImages (the paper: Lena, Table I):")
    print(im.round(4).to_string(index=False))
    print(f"\n{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
