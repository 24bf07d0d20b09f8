"""Issue 41: the HTML report a custodian hands on reads as words: no Python reprs ({'...'},
['...']), no internal column or intruder names, no "in 1 classes"; the settings by their
labels (the option schema's), the floors and recodings in words."""
import re

import sdccore
from ui import report

INTERNAL = ["close_own", "close_linked", "close_reconstructed", "beyond_prior", "with_release", "reported_only",
            "median_rel_error", "r2_kept", "release_fit", "residual_size", "key_match", "in 1 classes"]


def _text(h):
    return re.sub(r"<script.*?</script>", "", h, flags=re.S)  # plotly.js itself is code


def test_the_report_has_no_python_reprs_or_internal_names():
    d = sdccore.load_dataset("tarragona")
    r = sdccore.protect(d, "ipso", sensitive=["SALES"], rng=2)
    ev = sdccore.evaluate(d, r.data, sensitive=["SALES"])
    roles = {c: ("sensitive" if c == "SALES" else "public") for c in d.columns}
    for kind in ("internal", "external"):
        t = _text(report.build_report(kind, "tarragona", d.shape, roles, "IPSO", r.options, ev, None,
                                      r.dependencies, r.notes, r.risk, r.plausibility, None))
        assert "{'" not in t and "['" not in t, kind
        assert not [w for w in INTERNAL if w in t], kind
        assert "<td>Risk floors</td><td>at least 30% of each variable&#x27;s variance perturbed; " \
               "|cor(original, protected)| at most 0.90;" in t
        # the terms it names explained at its end, in the glossary's words (the dashboard's tooltips)
        gloss = t[t.index("<h2>Glossary</h2>"):]
        assert "<b>regression-preserving masking (IPSO)</b>" in gloss and "<b>prior</b>" in gloss
        assert "<b>Record linkage (DBRL)</b>" in gloss and "<b>k-anonymity (k)</b>" not in gloss  # no keys here
        assert "<td>Sensitive variables</td><td>SALES</td>" in t and "in 1 class)" in t


def test_the_settings_in_words():
    rows = dict(report.option_rows("fa", {"method": "fa", "keys": ["region", "sex"], "transform": [],
                                         "recode": {"age": sdccore.Recoding.bands([0, 10, float("inf")],
                                                                                  right=False).to_dict()},
                                         "household": None}))
    assert rows["Key variables"] == "region, sex" and rows["Log scale"] == "none"
    assert rows["Recodings of the keys"].startswith("the variable in bands of 10") and rows["Household id"] == "none"
