"""Server memory over repeated uploads, and 5 concurrent sessions (issue 6). Prints figures:

    python benchmarks/bench_sessions.py [--cycles 20] [--mb 50]

Starts `streamlit run app.py` on localhost, then with Debian's chromium (Playwright):
1. 20 cycles: a new browser session uploads a 50 MB CSV, waits until it is read, closes;
   prints the server's resident memory (VmRSS) after each cycle, after the disconnected
   sessions' TTL (60 s, .streamlit/config.toml) has passed, and once a new session has
   connected (Streamlit removes expired sessions when sessions are active, not on a timer);
2. 5 sessions start a comparison on Tarragona at the same moment; prints each one's time.
"""

import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _server import start_streamlit  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"]


def rss_mb(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024
    return float("nan")


def idle(page):
    page.wait_for_timeout(300)
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=300000)


def main(cycles=20, mb=50):
    proc, url = start_streamlit()
    tmp = Path(tempfile.mkdtemp())
    rows = int(mb * 2**20 / 70)  # about 70 bytes a row
    rng = np.random.default_rng(0)
    big = tmp / "big.csv"
    pd.DataFrame(rng.standard_normal((rows, 6)) * 1000, columns=list("abcdef")).to_csv(big, index=False, float_format="%.6f")
    print(f"upload file: {big.stat().st_size / 2**20:.1f} MB, {rows:,} rows x 6")
    try:
        with sync_playwright() as p:
            b = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
            ctx = b.new_context()
            page = ctx.new_page()
            page.goto(url)
            page.get_by_role("heading", name="Data").wait_for(timeout=120000)
            idle(page)
            ctx.close()
            time.sleep(2)
            print(f"server RSS after one empty session: {rss_mb(proc.pid):.0f} MB")
            for c in range(cycles):
                t = time.time()
                ctx = b.new_context()
                page = ctx.new_page()
                page.goto(url)
                page.get_by_role("heading", name="Data").wait_for(timeout=120000)
                idle(page)
                page.get_by_test_id("stRadioGroup").get_by_text("Upload a file", exact=True).click()
                idle(page)
                page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(big))
                page.get_by_text("big.csv (").wait_for(timeout=300000)
                idle(page)
                ctx.close()
                print(f"cycle {c + 1:2d}: {time.time() - t:5.1f} s, server RSS {rss_mb(proc.pid):6.0f} MB", flush=True)
            time.sleep(75)
            print(f"75 s after the last session closed: server RSS {rss_mb(proc.pid):.0f} MB", flush=True)
            # Streamlit drops expired disconnected sessions lazily, when there is session activity
            ctx = b.new_context()
            page = ctx.new_page()
            page.goto(url)
            page.get_by_role("heading", name="Data").wait_for(timeout=120000)
            idle(page)
            time.sleep(5)
            print(f"a new session connected: server RSS {rss_mb(proc.pid):.0f} MB", flush=True)
            ctx.close()
            for extra in (10, 30):
                time.sleep(10 if extra == 10 else 20)
                print(f"{extra} s later: server RSS {rss_mb(proc.pid):.0f} MB", flush=True)
            ctxs = [b.new_context() for _ in range(5)]
            pages = [c.new_page() for c in ctxs]
            for pg in pages:
                pg.goto(url)
                pg.get_by_role("heading", name="Data").wait_for(timeout=120000)
                idle(pg)
                pg.get_by_role("link", name="4 Run and compare").click()
                idle(pg)
            start = time.time()
            for pg in pages:
                pg.get_by_role("button", name="Run comparison").click()
            for i, pg in enumerate(pages):
                pg.get_by_text("Configuration to release").wait_for(timeout=600000)
                ok = pg.locator("[data-testid='stException']").count() == 0 and pg.get_by_text("Something went wrong").count() == 0
                print(f"session {i + 1}: comparison (3 methods x 10 runs) finished after {time.time() - start:.1f} s, "
                      f"{'no error' if ok else 'ERROR'}")
            b.close()
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    a = sys.argv
    main(int(a[a.index("--cycles") + 1]) if "--cycles" in a else 20, int(a[a.index("--mb") + 1]) if "--mb" in a else 50)
