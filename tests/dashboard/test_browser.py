"""End to end in a real browser: Playwright drives Debian's chromium against `streamlit run`.

Upload a CSV through the file input, set a sensitive variable, run a comparison, accept the
suggested release, download the protected CSV and check it; screenshots of every page go to
test-output/screenshots/.  Skipped, with the reason, where no chromium or playwright exists.
"""

import os
import re
import shutil
import time
from pathlib import Path

import numpy as np
from scipy import stats
import pandas as pd
import pytest

import sdccore

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SHOTS = ROOT / "test-output" / "screenshots"

playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
if not os.path.exists(CHROMIUM):
    pytest.skip("no chromium on this machine (CI installs Debian's chromium with apt)", allow_module_level=True)

# one worker of pytest-xdist runs them all: one started server and one browser for the module
pytestmark = pytest.mark.xdist_group("browser")


@pytest.fixture(scope="module")
def server(streamlit_url):
    return streamlit_url


@pytest.fixture(scope="module")
def browser():
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu",
                              "--disable-background-networking", "--disable-component-update", "--no-first-run"])
        yield b
        b.close()


@pytest.fixture(scope="module")
def context(browser):
    """One browser context for the tabs of the tests below (test_two_sessions_never_see_each_other
    keeps a context per user): its cache keeps the app's scripts compiled from one tab to the
    next, which a context of its own compiles again (about 2 CPU-s a tab).  Every tab is a
    session of its own (its own websocket; the server keeps nothing per cookie)."""
    c = browser.new_context(accept_downloads=True)
    yield c
    c.close()

# the suggestion's words name the configuration released (the offered methods' labels)
SUGGESTED = re.compile(r"Suggested release: (Q-exchange|IPSO|Shuffle|Rank swap|FA-cond|M-AGG)\b")


def _tab(context):
    page = context.new_page()
    page.set_viewport_size({"width": 1400, "height": 1000})
    return page


def _idle(page, timeout=60000):
    """Wait until Streamlit has finished running the script."""
    page.wait_for_timeout(300)
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=timeout)
    page.wait_for_timeout(300)


def _goto(page, title):
    page.get_by_role("link", name=title).click()
    _idle(page)


def _shot(page, name):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def _upload_in(page, server, path):
    page.goto(server)
    page.get_by_role("heading", name="Data").wait_for(timeout=60000)
    _idle(page)
    page.get_by_test_id("stRadioGroup").get_by_text("Upload a file", exact=True).click()
    _idle(page)
    drop = page.locator("[data-testid='stFileUploaderDropzoneInput']")
    drop.wait_for(state="attached", timeout=120000)  # a busy machine's first rerun can take 30 s and more
    drop.set_input_files(str(path))
    page.get_by_text(f"{path.name} (").wait_for(timeout=60000)
    _idle(page)


def _pick_sensitive(page, name):
    _pick(page, "Sensitive (protected most)", name)


def _pick(page, label, name):
    """Pick ``name`` in the multiselect ``label``.  On a busy machine the page may still be
    re-running when the list opens and the option is drawn again under the pointer
    ('element was detached'); the list is then opened again, up to three times.  The tab is
    brought to the front first: in a context of several tabs a list closes when it has not
    the focus."""
    page.bring_to_front()
    box = page.get_by_role("combobox", name=label)
    for attempt in range(3):
        _idle(page)
        box.click()
        box.fill(name)
        try:
            page.get_by_role("option", name=name, exact=True).click(timeout=15000)
            break
        except playwright.TimeoutError:
            if attempt == 2:
                raise
            page.keyboard.press("Escape")
    page.keyboard.press("Escape")
    _idle(page)


def test_upload_protect_download(server, context, tmp_path):
    data = sdccore.load_dataset("tarragona")
    src = tmp_path / "firms.csv"
    data.to_csv(src, index=False)
    page = _tab(context)
    _upload_in(page, server, src)
    page.get_by_text("firms.csv (834 records").wait_for(timeout=60000)
    # sensitive variable
    _pick_sensitive(page, "SALES")
    page.get_by_text("Sensitive (1):").wait_for()
    _shot(page, "1_data")
    _goto(page, "2 Explore")
    page.get_by_text("Recommended:").wait_for(timeout=60000)
    _shot(page, "2_explore")
    _goto(page, "3 Configure")
    page.get_by_text("Loadings (* and red: sensitive variable").first.wait_for(timeout=60000)
    _shot(page, "3_configure")
    _goto(page, "4 Run and compare")
    # every offered method, two repetitions each (the slider's least), not the default 10: what
    # is checked is the flow from upload to download, the suggestion (a method that keeps the most of
    # the analysts' battery, with 2 runs a method as with 10) and the release, made once at the app's seed whatever the repetitions
    _set_reps(page, 2)
    page.get_by_role("button", name="Run comparison").click()
    page.get_by_text("Configuration to release").wait_for(timeout=120000)
    _idle(page)
    # selective FA and PCA give SALES away through the public variables (refused); the suggested
    # release (pre-selected) meets every floor and keeps the most of the analysts' battery: the
    # quantile exchange, IPSO, shuffling or rank swapping, as the two runs go
    page.get_by_text("Suggested release: ").first.wait_for(timeout=60000)
    label = SUGGESTED.search(page.inner_text("body")).group(1)
    page.get_by_text(f"The release with {label}").wait_for(timeout=60000)
    _shot(page, "4_run")
    _goto(page, "5 Download")
    page.get_by_role("button", name="Download the protected CSV").wait_for(timeout=60000)
    _shot(page, "5_download")
    with page.expect_download() as dl:
        page.get_by_role("button", name="Download the protected CSV").click()
    out = pd.read_csv(dl.value.path())
    page.close()
    assert out.shape == data.shape
    assert list(out.columns) == list(data.columns)
    X = data.to_numpy(float)
    # rows were shuffled: compare sorted rows (SALES redrawn, the public variables unchanged)
    rows_out = set(map(tuple, out.to_numpy(float)))
    assert len(rows_out & set(map(tuple, X))) < 0.2 * len(X)  # SALES changed: records changed
    pub = [c for c in data.columns if c != "SALES"]
    assert set(map(tuple, out[pub].to_numpy(float))) == set(map(tuple, data[pub].to_numpy(float)))
    # what the suggested method keeps by construction (rows need not be aligned: each file's fit
    # on its own rows): the quantile exchange the median regression of SALES on the public
    # variables and its distribution, IPSO the OLS
    if label == "IPSO":
        chk = sdccore.regression_check(data, out, "SALES ~ " + " + ".join(pub))
        assert chk.table.drop(index="Intercept").overlap.mean() >= 0.9
    else:
        from sdccore._core import quantreg

        Z = data[pub].to_numpy(float)
        mu, sd = Z.mean(0), Z.std(0)

        def median_fit(frame):
            X = np.column_stack([np.ones(len(frame)), (frame[pub].to_numpy(float) - mu) / sd])
            b, lo, hi, _ = quantreg.fit(frame["SALES"].to_numpy(float), X)
            return b[1:], lo[1:], hi[1:]

        (_, lo_o, hi_o), (_, lo_r, hi_r) = median_fit(data), median_fit(out)
        inter = np.minimum(hi_o, hi_r) - np.maximum(lo_o, lo_r)
        overlap = 0.5 * (inter / (hi_o - lo_o) + inter / (hi_r - lo_r))  # Karr et al., per slope
        assert overlap.min() >= 0.6, overlap
        assert stats.ks_2samp(data.SALES, out.SALES).statistic <= 0.1
    assert abs(out.SALES.mean() / data.SALES.mean() - 1) <= 0.01
    assert np.all(np.abs(out.mean().to_numpy() - data.mean().to_numpy()) <= 0.25 * X.std(0))
    nonneg = data.columns[data.min() >= 0]
    assert (out[nonneg] >= 0).all().all() and (out.dtypes == np.int64).all()


def test_two_sessions_never_see_each_other(server, browser, tmp_path):
    """Two concurrent sessions with different data: previews, plots and downloads stay apart."""
    base = sdccore.load_dataset("tarragona")
    a = base.iloc[:400].add_prefix("alpha_")
    b = sdccore.load_dataset("casc").iloc[:500].add_prefix("beta_")
    pa, pb = tmp_path / "first.csv", tmp_path / "second.csv"
    a.to_csv(pa, index=False)
    b.to_csv(pb, index=False)
    ca, cb = browser.new_context(accept_downloads=True), browser.new_context(accept_downloads=True)
    A, B = ca.new_page(), cb.new_page()
    _upload_in(A, server, pa)
    _upload_in(B, server, pb)
    _goto(A, "2 Explore")  # a rerun of A after B uploaded
    _goto(A, "1 Data")
    textA, textB = A.content(), B.content()
    assert "first.csv" in textA and "second.csv" not in textA and "beta_" not in textA
    assert "second.csv" in textB and "first.csv" not in textB and "alpha_" not in textB
    outcomes = ("Download the protected CSV", "Release refused", "No method meets the risk floors")
    for page, cols in ((A, a.columns), (B, b.columns)):
        _goto(page, "5 Download")
        # the page settles on one of three outcomes (the recommendation behind it can take a while
        # on a loaded machine: wait for the outcome, not only for the status widget)
        page.wait_for_function("(texts) => texts.some(t => document.body.innerText.includes(t))",
                               arg=list(outcomes) + ["Prepare the release: "], timeout=180000)
        _idle(page)
        if page.get_by_role("button", name="Prepare the release: ").count():  # the recommended method offered
            page.get_by_role("button", name="Prepare the release: ").click()
            page.wait_for_function("(texts) => texts.some(t => document.body.innerText.includes(t))",
                                   arg=list(outcomes), timeout=180000)
            _idle(page)
        _shot(page, f"two_sessions_{'A' if page is A else 'B'}_download")
        # the floors refused this file (a configuration, or every method: CASC's PTOTVAL identity in
        # general protection): nothing to download, and nothing of the other session on the page
        if page.get_by_text("Release refused").count() or page.get_by_text("No method meets the risk floors").count():
            assert not any(c in page.content() for c in (b.columns if page is A else a.columns))
            continue
        with page.expect_download() as dl:
            page.get_by_role("button", name="Download the protected CSV").click()
        got = pd.read_csv(dl.value.path())
        assert list(got.columns) == list(cols)
    ca.close()
    cb.close()


def test_five_concurrent_comparisons(server, context):
    """Five sessions run a comparison on Tarragona at the same time; all finish without error.
    Two methods (FA and PCA, the others removed from the Run page's list) and two repetitions
    each (the slider's least), not the five methods twice: what is tested is that the five
    runs share the server's worker pool at once, and they still do (4 runs a comparison, the
    least that compare hands to the worker pool instead of running them in the session's own
    thread; the pool holds two runs per worker and session).  The five buttons are clicked
    by a DOM click each, without Playwright's wait for a still page, which takes a second a
    click on a loaded machine: the five start within a fraction of a second while each takes
    seconds, and the assertion below checks that none had finished when the last was started.
    The sessions are five tabs of one browser context (the fixture's)."""
    pages = [context.new_page() for _ in range(5)]
    for p in pages:
        p.goto(server)
        p.get_by_role("heading", name="Data").wait_for(timeout=60000)
        _idle(p)
        _goto(p, "4 Run and compare")
        _set_reps(p, 2)
        for m in ("M-AGG", "Rank swap", "PCA-R"):
            p.locator(".st-key-run_methods").get_by_role("button", name=f"Remove {m}", exact=True).click()
            _idle(p)
        assert [t.get_attribute("aria-label") for t in p.locator(".st-key-run_methods [data-tag]").all()] == ["FA", "PCA"]
    buttons = [p.get_by_role("button", name="Run comparison") for p in pages]
    for b in buttons:
        b.wait_for()
    start = time.time()
    for b in buttons:
        b.dispatch_event("click")
    # none had finished when the last was started: the five ran at once
    assert all(p.get_by_text("Configuration to release").count() == 0 for p in pages)
    took = []
    for p in pages:
        p.get_by_text("Configuration to release").wait_for(timeout=240000)
        took.append(time.time() - start)
        assert p.locator("[data-testid='stException']").count() == 0
        assert p.get_by_text("Something went wrong").count() == 0
    print("seconds until each of 5 concurrent comparisons finished:", [round(t, 1) for t in took])
    for p in pages:
        p.close()


def test_round_two_uploads_and_cancel(server, context, tmp_path):
    """Text numbers are read and said; an empty column is excluded, never every record
    dropped; a long comparison is cancelled by its button and the page settles."""
    bad = ROOT / "tests" / "data" / "bad"
    page = _tab(context)
    _upload_in(page, server, bad / "34_currency.csv")
    page.get_by_text("currency signs").first.wait_for(timeout=60000)
    _shot(page, "r2_currency")
    page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(bad / "55_all_empty_column.csv"))
    page.get_by_text("55_all_empty_column.csv (").wait_for(timeout=60000)
    _idle(page)
    assert page.get_by_role("button", name="Drop the").count() == 0
    # the empty column holds one value at most: excluded (released as it is) with the reason,
    # nothing to click (it blocked the pages before)
    t = time.perf_counter()
    page.get_by_text(re.compile(r"excluded: [1-9]")).first.wait_for(timeout=60000)
    exclude_s = time.perf_counter() - t
    assert page.get_by_role("button", name="Exclude empty").count() == 0
    _shot(page, "r2_empty_column_excluded")
    assert page.get_by_text("55_all_empty_column.csv (60 records").count() == 1
    _goto(page, "4 Run and compare")
    page.get_by_role("slider").first.focus()
    page.keyboard.press("End")  # 100 repetitions per method: a long run
    _idle(page)
    page.get_by_text("100", exact=True).first.wait_for()
    page.get_by_role("button", name="Run comparison").click()
    page.get_by_role("button", name="Cancel").wait_for(timeout=60000)
    page.get_by_text("runs, about").first.wait_for(timeout=60000)
    t = time.perf_counter()
    page.get_by_role("button", name="Cancel").click()
    page.get_by_role("button", name="Cancel").wait_for(state="detached", timeout=60000)
    _idle(page, timeout=60000)
    cancel_s = time.perf_counter() - t
    page.wait_for_timeout(3000)
    _shot(page, "r2_cancelled")
    assert page.get_by_text("Configuration to release").count() == 0  # stopped: no result
    assert page.get_by_text("runs, about").count() == 0
    page.close()
    print(f"exclude click to settled: {exclude_s:.1f} s; cancel click to settled: {cancel_s:.1f} s")
    assert cancel_s < 30


def test_missing_cells_and_regression_check(server, context, tmp_path):
    """A file with text ids and missing cells: kept missing (the default), a regression typed
    in the Run page's box is checked on the comparison and the release, and the downloaded
    file has its missing cells where the original had them (counted per column)."""
    data = sdccore.load_dataset("tarragona")
    rng = np.random.default_rng(3)
    d = data.astype(float)
    for c in ("SALES", "LABOR.COSTS", "CURRENT.ASSETS"):
        d.loc[rng.random(len(d)) < 0.04, c] = np.nan
    d.loc[100:119, "TREASURY"] = np.nan  # a block
    d.insert(0, "firm", [f"F{i:05d}" for i in range(len(d))])
    src = tmp_path / "firms_missing.csv"
    d.to_csv(src, index=False)
    page = _tab(context)
    _upload_in(page, server, src)
    page.get_by_text("missing cell(s) in").first.wait_for(timeout=60000)
    # (since issue 38 general protection of this file is refused with every method: intruders who
    # know the method take back some of the 9 largest firms.  SALES sensitive: a rank swap of SALES
    # alone meets the floors here, in the comparison's 3 runs and in the release at the app's seed)
    _pick_sensitive(page, "SALES")
    _shot(page, "missing_1_data")
    _goto(page, "4 Run and compare")
    _set_reps(page, 3)  # what is checked is the missing cells and the regression, not the scores' intervals
    # rank swapping alone, the method released below: what is checked is the regression on the
    # comparison and the release and the released file, none of it about the other methods (on a
    # file with missing cells a run takes about 1 CPU-s: 24 runs with every method, 3 with it)
    _only_methods(page, ["Rank swap"])
    area = page.locator(".st-key-run_models textarea")
    area.fill("SALES ~ LABOR.COSTS + FIXED.ASSETS")
    area.press("Control+Enter")
    _idle(page)
    page.get_by_role("button", name="Run comparison").click()
    page.get_by_text("Configuration to release").wait_for(timeout=180000)
    _idle(page)
    page.get_by_text("Does the analysis still hold?").first.wait_for(timeout=60000)
    page.locator(".st-key-release_pick").get_by_text("Rank swap", exact=True).click()
    _idle(page)
    page.get_by_text("This release (seed").wait_for(timeout=60000)
    _shot(page, "missing_4_run_regression")
    _goto(page, "5 Download")
    page.get_by_role("button", name="Download the protected CSV").wait_for(timeout=60000)
    with page.expect_download() as dl:
        page.get_by_role("button", name="Download the protected CSV").click()
    out = pd.read_csv(dl.value.path())
    with page.expect_download() as dl:
        page.get_by_role("button", name="Download the report (HTML)").click()
    report = Path(dl.value.path()).read_text()
    page.close()
    assert "firm" not in out.columns  # the identifier is dropped
    num = [c for c in d.columns if c != "firm"]
    assert out[num].isna().sum().to_dict() == d[num].isna().sum().to_dict()
    # rank swapping of SALES alone: the public variables are released as they are and SALES's
    # observed values in another order (rows shuffled: each column compared sorted)
    for c in num:
        assert np.array_equal(np.sort(out[c].dropna().to_numpy()), np.sort(d[c].dropna().to_numpy())), c
    rows = lambda f: set(map(tuple, f[num].fillna(-1.0).to_numpy(float)))  # noqa: E731 (a missing cell as -1)
    assert len(rows(out) & rows(d)) < 0.2 * len(d)  # SALES moved: records changed
    assert "Does the analysis still hold?" in report and "LABOR.COSTS" in report


def _only_methods(page, names):
    """The Run page's methods (its multiselect, every offered method by default) set to ``names``."""
    page.locator(".st-key-run_methods").get_by_role("button", name="Clear all").click()
    _idle(page)
    for name in names:
        _pick(page, "Methods (as configured on page 3)", name)
    assert [t.get_attribute("aria-label") for t in page.locator(".st-key-run_methods [data-tag]").all()] == names


def _set_reps(page, reps):
    """The Run page's repetitions per method (its first slider, from 2 to 100) set to ``reps``
    (the keys go to the tab in front: it is brought there first)."""
    slider = page.get_by_role("slider").first
    for attempt in range(3):  # a page still re-running may redraw the slider under the keys
        _idle(page)
        page.bring_to_front()
        slider.focus()
        page.keyboard.press("Home")
        for _ in range(reps - 2):
            page.keyboard.press("ArrowRight")
        _idle(page)
        if slider.input_value() == str(reps):
            break
    assert slider.input_value() == str(reps)


def _run_page_with_reps(page, server, reps):
    page.goto(server)
    page.get_by_role("heading", name="Data").wait_for(timeout=60000)
    _idle(page)
    _pick_sensitive(page, "SALES")
    _goto(page, "4 Run and compare")
    _set_reps(page, reps)


def test_one_session_stopping_never_breaks_another(server, context):
    """Three sessions compare on the Tarragona sample (SALES sensitive); while they run, one
    clicks Cancel and one closes its tab; the third finishes with its suggestion and no
    error, and the cancelled one runs again to its suggestion (with two repetitions per
    method, not four: what is checked is that it runs again, its runs cut short before).
    Before (issue 36), the stop aborted the worker pool they all shared: the others said
    'Something went wrong in this step (RuntimeError)' or froze at '9 of 80 runs'.  The
    sessions are three tabs of one browser context (the fixture's)."""
    A, C, B = (context.new_page() for _ in range(3))
    for page, reps in ((A, 4), (C, 4), (B, 3)):
        _run_page_with_reps(page, server, reps)
    for page in (A, C, B):
        page.get_by_role("button", name="Run comparison").click()
    for page in (A, C, B):
        page.get_by_text("runs, about").first.wait_for(timeout=120000)
    A.get_by_role("button", name="Cancel").click()
    C.close()
    A.get_by_role("button", name="Cancel").wait_for(state="detached", timeout=60000)
    t = time.perf_counter()
    B.get_by_text("Suggested release:").first.wait_for(timeout=240000)
    _idle(B)
    assert B.get_by_text("Something went wrong").count() == 0
    assert B.locator("[data-testid='stException']").count() == 0
    _shot(B, "stop_other_session_finished")
    took = time.perf_counter() - t
    assert A.get_by_text("Something went wrong").count() == 0
    _set_reps(A, 2)
    A.get_by_role("button", name="Run comparison").click()
    A.get_by_text("Suggested release:").first.wait_for(timeout=240000)
    assert A.get_by_text("Something went wrong").count() == 0
    print(f"one session cancelled, one closed: the third finished {took:.1f} s later")
    A.close()
    B.close()


def test_the_keys_section_on_a_survey_file(server, context, tmp_path):
    """Issue 40: a survey file uploaded as a custodian would (text codes, a household id, a
    sampling weight): the Data page suggests the keys, the household and the weight and shows
    who the keys single out, in the browser; removing a key lowers the count."""
    d = sdccore.load_dataset("testdata")[["urbrur", "water", "sex", "age", "ori_hid", "sampling_weight", "income"]]
    d = d.assign(sex=d.sex.map({1: "male", 2: "female"}))
    src = tmp_path / "persons.csv"
    d.to_csv(src, index=False)
    page = _tab(context)
    _upload_in(page, server, src)
    page.get_by_text("Key variables: could someone be recognised?").wait_for(timeout=60000)
    # the metrics come after the recodings' suggestions are computed: wait for them, not only the heading
    page.locator("[data-testid='stMetricLabel']").get_by_text("Unique records").wait_for(timeout=60000)
    _idle(page)
    section = page.locator("[data-testid='stMetric']")
    values = dict(zip(section.locator("[data-testid='stMetricLabel']").all_inner_texts(),
                      section.locator("[data-testid='stMetricValue']").all_inner_texts()))
    # the tutorial's keys (urbrur, water, sex, age) with ori_hid and sampling_weight: 14.7 % of ages would be blank,
    # so by default age is in bands of 5 (said why), and the figures are those of the recoded keys
    page.get_by_text("By default age recoded (age in bands of 5").wait_for(timeout=60000)
    keys = ["urbrur", "water", "sex", "age"]
    rules = sdccore.default_recodings(d, keys, 3, household="ori_hid")
    r = sdccore.key_risk(sdccore.recode(d, dict(rules.rules)), keys, weights="sampling_weight", household="ori_hid")
    assert values["Unique records"] == f"{r.sample_uniques:,}" and values["Fewer than 3 alike"] == f"{r.below_k:,}"
    assert r.sample_uniques < 330
    # taken out: sdcMicro's figures of the tutorial's keys
    page.get_by_role("button", name="Remove age in bands of 5").click()
    _idle(page)
    for _ in range(60):  # the rerun may land after the page looked idle on a busy machine
        values = dict(zip(section.locator("[data-testid='stMetricLabel']").all_inner_texts(),
                          section.locator("[data-testid='stMetricValue']").all_inner_texts()))
        if values["Unique records"] == "330":
            break
        page.wait_for_timeout(500)
    assert values["Unique records"] == "330" and values["Fewer than 3 alike"] == "674"
    assert values["Expected re-identifications"] == "24.8" and values["Household risk (persons)"] == "117.2"
    page.get_by_text("The rarest combinations").scroll_into_view_if_needed()
    _shot(page, "keys_1_data")
    page.get_by_role("button", name="Remove age", exact=True).click()  # age out of the keys: far fewer stand out
    _idle(page)
    for _ in range(60):  # the rerun may land after the page looked idle on a busy machine
        values = dict(zip(section.locator("[data-testid='stMetricLabel']").all_inner_texts(),
                          section.locator("[data-testid='stMetricValue']").all_inner_texts()))
        if int(values["Unique records"].replace(",", "")) < 330:
            break
        page.wait_for_timeout(500)
    assert int(values["Unique records"].replace(",", "")) < 330
    page.close()


def test_the_report_is_small_and_its_charts_draw_offline(browser, tmp_path):
    """Issue 41: the report embeds plotly.js's basic bundle once (every chart is a scatter or bar
    chart), so that it is under 1.5 MB for Tarragona with a comparison, opens without a network
    and draws every chart with no script error."""
    from ui import report

    d = sdccore.load_dataset("tarragona")
    r = sdccore.protect(d, "ipso", sensitive=["SALES"], rng=2)
    ev = sdccore.evaluate(d, r.data, sensitive=["SALES"])
    c = sdccore.compare(d, {"IPSO": {"method": "ipso"}, "Rank swap": {"method": "rankswap"}}, sensitive=["SALES"],
                        reps=2, rng=1)
    roles = {col: ("sensitive" if col == "SALES" else "public") for col in d.columns}
    for kind in ("internal", "external"):
        h = report.build_report(kind, "tarragona", d.shape, roles, "IPSO", r.options, ev, c, r.dependencies,
                                r.notes, r.risk, r.plausibility, None)
        assert len(h.encode()) < 1_500_000 and h.count("plotly.js (basic - minified)") == 1
        path = tmp_path / f"{kind}.html"
        path.write_text(h, encoding="utf-8")
        ctx = browser.new_context(offline=True)
        page = ctx.new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(path.as_uri())
        page.locator(".js-plotly-plot .main-svg").first.wait_for(timeout=30000)
        assert page.locator(".js-plotly-plot").count() == 4 and not errors
        ctx.close()


def _on_first_screen(locator):
    """Whether the element lies within the first screen of the 1400 x 1000 window (no scrolling)."""
    locator.wait_for(timeout=120000)
    # as the page opens: scrolled to its top (picking in a list lower down scrolls the page)
    locator.page.evaluate("() => { window.scrollTo(0, 0); document.querySelectorAll('*').forEach(e => "
                          "{ if (e.scrollTop) e.scrollTop = 0; }); }")
    locator.page.wait_for_timeout(200)
    box = locator.bounding_box()
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 1000


REFUSED_TRACES = """() => [...document.querySelectorAll('.js-plotly-plot')].flatMap(g => (g.data || [])
    .filter(t => t.marker && t.marker.symbol === 'x-thin-open').map(t => t.name))"""


def test_every_page_leads_with_its_decision(server, context, tmp_path):
    """Issue 41: the first screen answers the page's question: the Explore page its recommendation,
    the Configure page the configuration's verdict, the Run page the suggestion, the Download page
    the release's verdict; refused configurations are markers of their own on the risk-utility
    chart; and EIA with RESREVENUE sensitive says first that the public columns already reveal it."""
    page = _tab(context)
    page.goto(server)
    page.get_by_role("heading", name="Data").wait_for(timeout=60000)
    _idle(page)
    _pick_sensitive(page, "SALES")
    assert _on_first_screen(page.get_by_text("Ready to protect tarragona: SALES sensitive, 12 public").first)
    _goto(page, "2 Explore")
    assert _on_first_screen(page.get_by_text("Recommended:").first)
    _goto(page, "3 Configure")
    assert _on_first_screen(page.get_by_text("This configuration breaks the risk floors for SALES").first)  # FA refused
    _goto(page, "4 Run and compare")
    assert _on_first_screen(page.get_by_text("No comparison yet").first)
    _set_reps(page, 2)
    page.get_by_role("button", name="Run comparison").click()
    page.get_by_text("Configuration to release").wait_for(timeout=180000)
    _idle(page)
    assert _on_first_screen(page.get_by_text("Suggested release: ").first)
    label = SUGGESTED.search(page.inner_text("body")).group(1)
    page.screenshot(path=str(SHOTS / "first_screen_run.png"))
    refused = page.evaluate(REFUSED_TRACES)
    assert {"FA (refused)", "PCA (refused)"} <= set(refused), refused
    _goto(page, "5 Download")
    assert _on_first_screen(page.get_by_text(f"{label} may be released: every sensitive variable meets").first)
    page.screenshot(path=str(SHOTS / "first_screen_download.png"))
    page.close()
    # EIA, RESREVENUE sensitive: the public columns predict it for most utilities
    src = tmp_path / "eia.csv"
    sdccore.load_dataset("eia").to_csv(src, index=False)
    page = _tab(context)
    _upload_in(page, server, src)
    # the Data page's status first (EIA's text columns are suggested as key variables: nothing open)
    assert _on_first_screen(page.get_by_text("Ready to protect eia.csv: general protection").first)
    _pick_sensitive(page, "RESREVENUE")
    _goto(page, "3 Configure")
    page.get_by_test_id("stRadio").get_by_text("IPSO", exact=True).click()
    _idle(page)
    assert _on_first_screen(page.get_by_text("Already revealed before any release").first)
    page.screenshot(path=str(SHOTS / "first_screen_configure_eia.png"))
    page.close()
