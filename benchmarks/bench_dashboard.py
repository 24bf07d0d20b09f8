"""Server time of widget interactions on pages 1-3 (issue 5 target: each within 300 ms on
Tarragona), measured with streamlit's AppTest (script run time, no browser).

    python benchmarks/bench_dashboard.py
"""

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from streamlit.testing.v1 import AppTest  # noqa: E402


def timed(label, at, action, results, reps=5):
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        action(at)
        times.append(time.perf_counter() - t)
        assert not at.exception, at.exception
    results.append((label, statistics.median(times) * 1000, max(times) * 1000))


def main():
    import os
    os.chdir(ROOT)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    t = time.perf_counter()
    at.run()
    first = (time.perf_counter() - t) * 1000
    res = []
    timed("page 1: rerun (no change)", at, lambda a: a.run(), res)
    flip = iter(["SALES", "NET.PROFIT"] * 10)
    timed("page 1: set sensitive variable", at, lambda a: a.multiselect(key="sensitive_select").set_value([next(flip)]).run(), res)
    at.multiselect(key="sensitive_select").set_value(["SALES"]).run()
    at.switch_page("pages/2_explore.py").run()
    timed("page 2: explore (rerun)", at, lambda a: a.run(), res)
    at.switch_page("pages/3_configure.py").run()
    rots = iter(["varimax", "isolate_sensitive", "quartimax", "none"] * 5)
    timed("page 3: FA rotation change (live plots)", at, lambda a: a.selectbox(key="fa_rotation").set_value(next(rots)).run(), res)
    thr = iter([0.2, 0.3, 0.4, 0.5, 0.25] * 4)
    at.selectbox(key="fa_rotation").set_value("isolate_sensitive").run()
    at.radio(key="fa_selection").set_value("criterion").run()
    timed("page 3: FA threshold change", at, lambda a: a.slider(key="fa_threshold").set_value(next(thr)).run(), res)
    at.radio(key="fa_selection").set_value("manual").run()
    masks = iter([True, False] * 10)
    timed("page 3: FA mask checkbox", at, lambda a: a.checkbox(key="fa_mask_3").set_value(next(masks)).run(), res)
    nf = iter([5, 6, 7, 8, 9] * 4)
    timed("page 3: number of factors (new fit)", at, lambda a: a.number_input(key="fa_n_factors").set_value(next(nf)).run(), res)
    print(f"first run (imports, sample, JIT cache): {first:.0f} ms")
    print(f"{'interaction':45s} {'median':>8s} {'max':>8s}")
    for label, med, mx in res:
        print(f"{label:45s} {med:7.0f}ms {mx:7.0f}ms")


if __name__ == "__main__":
    main()
