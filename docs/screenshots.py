"""The tutorial's screenshots (docs/img/*.png), taken from the running dashboard.

    .venv/bin/python docs/screenshots.py            # every picture of docs/tutorial.md
    .venv/bin/python docs/screenshots.py --port 8611

Starts the dashboard as the README does (``python -m ui``, the bundled Tarragona sample
loaded) on 127.0.0.1, drives it with Playwright and Debian's chromium (``/usr/bin/chromium``;
Playwright never downloads a browser here) through the tutorial's flow: the sample, SALES
sensitive, Explore, Configure, a comparison with two repetitions a method, the suggested
release on the Download page, the History page; then a second session that goes from the Data
page straight to Download, where the recommended method waits behind "Prepare the release".  Each picture is the 1400 x 900
window, taken once the element it shows is drawn and the page has stopped running (never
on network silence: Streamlit keeps its websocket open), and kept under 250 KB (reduced to
256 colours where the full-colour PNG is larger).  The server is stopped at the end.
"""

from __future__ import annotations

import argparse
import io
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMG = ROOT / "docs" / "img"
CHROMIUM = "/usr/bin/chromium"
MAX_BYTES = 250_000
WIDTH, HEIGHT = 1400, 900


def start_server(port: int) -> subprocess.Popen:
    """``python -m ui`` on 127.0.0.1:port, in a process group of its own; returns once healthy."""
    cmd = [sys.executable, "-m", "ui", "--server.port", str(port), "--server.headless", "true",
           "--server.address", "127.0.0.1"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.time() + 90
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the dashboard exited with status {proc.returncode}: {' '.join(cmd)}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                if r.read() == b"ok":
                    return proc
        except OSError:
            time.sleep(0.5)
    stop_server(proc)
    raise RuntimeError(f"the dashboard did not answer on port {port} within 90 s")


def stop_server(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def settled(page, timeout=120_000) -> None:
    """Streamlit has finished running the page's script: its status widget ('Running...') is gone
    and no element is drawn greyed out as stale (left from the run before)."""
    page.wait_for_timeout(300)
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]') && "
                           "!document.querySelector('[data-stale=\"true\"]')", timeout=timeout)
    page.wait_for_timeout(400)


def goto(page, link: str, heading: str) -> None:
    """Open the page named ``link`` in the sidebar; wait for its title ``heading`` and its run's end."""
    page.get_by_role("link", name=link).click()
    page.get_by_role("heading", name=heading, exact=True).first.wait_for(timeout=60_000)
    settled(page)


def top_at(page, locator, air: int = 60) -> None:
    """Scroll the page's main area so that ``locator`` stands ``air`` pixels below the window's top."""
    locator.scroll_into_view_if_needed()
    locator.evaluate("""(e, air) => {
        e.scrollIntoView({block: 'start'});
        let box = e.parentElement;  // the scrolling container of Streamlit's main area
        while (box && !(box.scrollHeight > box.clientHeight && getComputedStyle(box).overflowY !== 'visible'))
            box = box.parentElement;
        (box || document.scrollingElement).scrollTop -= air;
    }""", air)
    page.wait_for_timeout(500)


def shot(page, name: str) -> Path:
    """The window as a PNG in docs/img/, reduced to 256 colours if it is over 250 KB."""
    from PIL import Image

    IMG.mkdir(parents=True, exist_ok=True)
    page.mouse.move(WIDTH - 5, HEIGHT - 5)  # no hover tooltip nor chart toolbar in the picture
    page.wait_for_timeout(800)
    raw = page.screenshot()
    path = IMG / f"{name}.png"
    img = Image.open(io.BytesIO(raw)).convert("RGB")
    buf = io.BytesIO()
    img.save(buf, "PNG", optimize=True)
    if buf.tell() > MAX_BYTES:
        buf = io.BytesIO()
        img.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(buf, "PNG", optimize=True)
    if buf.tell() > MAX_BYTES:
        raise RuntimeError(f"{path.name} is {buf.tell():,} bytes even in 256 colours")
    path.write_bytes(buf.getvalue())
    print(f"{path.relative_to(ROOT)}: {buf.tell() / 1000:.0f} KB")
    return path


def pick(page, label: str, option: str) -> None:
    """Pick ``option`` in the multiselect ``label`` (opened again if a re-run redrew it)."""
    from playwright.sync_api import TimeoutError as PWTimeout

    box = page.get_by_role("combobox", name=label)
    for attempt in range(3):
        settled(page)
        box.click()
        box.fill(option)
        try:
            page.get_by_role("option", name=option, exact=True).click(timeout=15_000)
            break
        except PWTimeout:
            if attempt == 2:
                raise
            page.keyboard.press("Escape")
    page.keyboard.press("Escape")
    settled(page)


def set_reps(page, reps: int) -> None:
    """The Run page's 'Repetitions per method' slider (from 2) set to ``reps`` by its keys."""
    slider = page.get_by_role("slider").first
    for _ in range(3):
        settled(page)
        slider.focus()
        page.keyboard.press("Home")
        for _ in range(reps - 2):
            page.keyboard.press("ArrowRight")
        settled(page)
        if slider.input_value() == str(reps):
            return
    raise RuntimeError(f"the repetitions slider shows {slider.input_value()}, not {reps}")


def tutorial(page, url: str) -> None:
    # 1 the bundled sample: Tarragona is loaded when the dashboard starts
    page.goto(url)
    page.get_by_role("heading", name="Data", exact=True).wait_for(timeout=90_000)
    page.get_by_text("Preview: tarragona (834 records x 13 columns)").wait_for(timeout=90_000)
    page.get_by_role("combobox", name="Sensitive (protected most)").wait_for(timeout=90_000)
    page.locator("[data-testid='stDataFrame'] canvas").first.wait_for(timeout=90_000)
    settled(page)
    shot(page, "01_sample")

    # 2 the roles: SALES sensitive, the other twelve figures public
    pick(page, "Sensitive (protected most)", "SALES")
    page.get_by_text("Sensitive (1):").wait_for()
    top_at(page, page.get_by_role("heading", name="Roles"))
    shot(page, "02_data_roles")

    # 3 Explore: correlations, KMO and Bartlett, scree, between/within, the recommendation
    goto(page, "2 Explore", "Explore")
    page.get_by_role("heading", name="Which method?").wait_for(timeout=120_000)
    page.locator("[data-testid='stPlotlyChart']").first.wait_for(timeout=60_000)
    settled(page)
    shot(page, "03_explore")

    # 4 Configure: FA's settings, its live loadings and perturbed-share plots
    goto(page, "3 Configure", "Configure")
    page.get_by_text("Loadings (* and red: sensitive variable").first.wait_for(timeout=120_000)
    settled(page)
    top_at(page, page.get_by_role("radiogroup", name="Method").first, air=50)
    shot(page, "04_configure")

    # 5 Run and compare: every offered method, two repetitions each; the decision comes first
    goto(page, "4 Run and compare", "Run and compare")
    set_reps(page, 2)
    page.get_by_role("button", name="Run comparison").click()
    page.get_by_text("Configuration to release").wait_for(timeout=300_000)
    page.get_by_text("Suggested release:").wait_for(timeout=60_000)
    settled(page, 300_000)
    top_at(page, page.get_by_text("Suggested release:"))
    shot(page, "05_run")

    # 6 Download: the release picked on the Run page (the suggestion); the file, recipe and report
    goto(page, "5 Download", "Download")
    prepare = page.get_by_role("button", name="Prepare the release")
    download = page.get_by_role("button", name="Download the protected CSV")
    page.wait_for_function("() => [...document.querySelectorAll('button')].some(b => "
                           "b.innerText.includes('Prepare the release') || "
                           "b.innerText.includes('Download the protected CSV'))", timeout=180_000)
    if prepare.count():
        prepare.click()
    download.wait_for(timeout=180_000)
    settled(page)
    top_at(page, page.get_by_role("heading", name="Release:").first)
    shot(page, "06_download")

    # 7 History: the comparison and the release of this session
    goto(page, "6 History", "History of this session")
    page.get_by_role("heading", name="Compare two runs side by side").wait_for(timeout=60_000)
    settled(page)
    shot(page, "07_history")


def prepare(page, url: str) -> None:
    """A second session that goes from the Data page straight to Download: nothing was picked on
    the Run page, so the page offers the recommended method behind 'Prepare the release'."""
    page.goto(url)
    page.get_by_role("heading", name="Data", exact=True).wait_for(timeout=90_000)
    page.get_by_role("combobox", name="Sensitive (protected most)").wait_for(timeout=90_000)
    pick(page, "Sensitive (protected most)", "SALES")
    page.get_by_text("Sensitive (1):").wait_for()
    goto(page, "5 Download", "Download")
    button = page.get_by_role("button", name="Prepare the release")
    button.wait_for(timeout=180_000)
    settled(page)
    shot(page, "08_prepare")
    button.click()
    page.get_by_role("button", name="Download the protected CSV").wait_for(timeout=180_000)
    settled(page)
    top_at(page, page.get_by_role("button", name="Download the protected CSV"), air=420)
    shot(page, "09_prepared_download")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=8611)
    args = ap.parse_args(argv)
    if not os.path.exists(CHROMIUM):
        print(f"no {CHROMIUM}: install Debian's chromium (apt-get install chromium)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    proc = start_server(args.port)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM,
                                        args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
            try:
                page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
                try:
                    tutorial(page, f"http://127.0.0.1:{args.port}/")
                    page.close()
                    page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})  # a session of its own
                    prepare(page, f"http://127.0.0.1:{args.port}/")
                except Exception:
                    page.screenshot(path=str(ROOT / "test-output" / "screenshots_failed.png"), full_page=True)
                    raise
            finally:
                browser.close()
    finally:
        stop_server(proc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
