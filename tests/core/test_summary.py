"""``Summary`` (issue 37, point 4): a result's summary is its text and its HTML from one
structure; it is a str, so everything that printed or split the old text still works."""

import pickle

import sdccore
from sdccore._core.summary import Summary


def test_text_and_html_come_from_one_structure():
    s = Summary("Verdict <ok>", ["a: 1", Summary("inner & nested", ["x"]), "b"])
    assert s == "Verdict <ok>\n  a: 1\n  inner & nested\n    x\n  b"
    assert s.as_text() == str(s) and isinstance(s, str)
    assert s.as_html() == ('<div class="sdccore-summary"><p><b>Verdict &lt;ok&gt;</b></p><ul><li>a: 1</li>'
                           '<li>inner &amp; nested<ul><li>x</li></ul></li><li>b</li></ul></div>')
    assert s._repr_html_() == s.as_html()
    back = pickle.loads(pickle.dumps(s))
    assert back == s and back.as_html() == s.as_html()


def test_the_results_summaries_keep_their_words_and_nest():
    df = sdccore.load_dataset("tarragona")
    res = sdccore.protect(df, "ipso", sensitive=["SALES"], rng=12345)
    s = res.summary()
    # the same lines as before the Summary (the risk profile's lines indented under the result)
    assert s.splitlines()[:3] == [repr(res), "  " + repr(res.risk),
                                  f"    SALES: {res.risk.variables.loc['SALES', 'beyond_prior']:.1%} beyond the prior "
                                  f"({sdccore.intruder_info(res.risk.variables.loc['SALES', 'intruder']).heading}), "
                                  f"meets the floors"]
    assert "<ul><li>" + repr(res.risk).replace("'", "&#x27;") in s.as_html()
    ev = sdccore.evaluate(df, res.data, sensitive=["SALES"])
    assert ev.summary().splitlines()[1] == f"  dbrl: {ev.scores.dbrl:.4f}"
    assert "\n".join("  " + line for line in ev.risk.summary().splitlines()) in ev.summary()
