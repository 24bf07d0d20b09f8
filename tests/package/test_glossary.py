"""Issue 41: one glossary for the dashboard's tooltips, the reports and the documentation: every
method, measure and intruder registered is named in plain words first, with its abbreviation in
brackets, and the documentation's glossary page is the library's own text."""
from pathlib import Path

import sdccore

ROOT = Path(__file__).resolve().parents[2]


def test_every_registered_method_measure_and_intruder_is_in_the_glossary():
    terms = sdccore.report.glossary()
    kinds = {k: [t for t in terms if t.kind == k] for k in ("method", "measure", "intruder", "idea")}
    assert len(kinds["method"]) == len(sdccore.methods())
    assert len(kinds["measure"]) == len(sdccore.analyses())
    assert len(kinds["intruder"]) == len(sdccore.intruders())
    titles = {t.title for t in terms}
    # words first, the abbreviation in brackets
    assert {"factor analysis (FA)", "regression-preserving masking (IPSO)", "microaggregation plus noise (M-AGG)",
            "Record linkage (DBRL)", "Interval disclosure (ID)", "Information loss (PIL)",
            "post-randomisation (PRAM)", "k-anonymity (k)"} <= titles
    assert all(t.meaning and t.meaning[0].isupper() and t.meaning.endswith(".") for t in terms)


def test_a_tip_is_found_by_words_abbreviation_or_title():
    assert sdccore.report.tip("DBRL") == sdccore.report.tip("record linkage (dbrl)") \
        == sdccore.report.tip("Record linkage")
    assert "distance-based record linkage" in sdccore.report.tip("DBRL")
    assert sdccore.report.tip("IPSO").startswith("regression-preserving masking (IPSO): ")
    assert sdccore.report.tip("no such term") == ""


def test_the_glossary_section_of_a_report_names_only_what_the_report_says():
    html = sdccore.report.glossary_html("<p>The prior of SALES; PRAM on region.</p>")
    assert "<b>prior</b>" in html and "<b>post-randomisation (PRAM)</b>" in html
    assert "k-anonymity" not in html and "Record linkage" not in html
    assert sdccore.report.glossary_html("<p>nothing here</p>") == ""


def test_the_documentation_glossary_is_the_librarys():
    """docs/glossary.md is written by ``sdccore.report.glossary_markdown()`` (regenerate it with
    ``python -c "import sdccore; print(sdccore.report.glossary_markdown())" > docs/glossary.md``)."""
    assert (ROOT / "docs" / "glossary.md").read_text() == sdccore.report.glossary_markdown() + "\n"
