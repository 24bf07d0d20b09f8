"""The glossary: every method, measure, intruder and idea the pages, the reports and the command
line name, in plain words first (the abbreviation in brackets), with what it means.  One source:
the dashboard's tooltips, the reports' glossary section and the documentation's glossary page
(``docs/glossary.md``, written by ``glossary_markdown``) all read it.  The registered methods,
measures and intruders are read from their registries at each call, plug-ins included."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

from .._measures.analyses import analyses, analysis_info
from .._methods import method_info, methods
from .._risk.registry import intruder_info, intruders


@dataclass(frozen=True)
class Term:
    """One glossary entry: ``words`` (the plain name), ``short`` (the abbreviation or the name the
    tables use, or ''), ``meaning`` (one or two sentences) and ``kind`` (method, measure,
    intruder, idea)."""

    words: str
    short: str
    meaning: str
    kind: str

    @property
    def title(self) -> str:
        """'words (SHORT)', or the words alone."""
        return f"{self.words} ({self.short})" if self.short and self.short != self.words else self.words


# the built-in methods in words (a plug-in method is named by its label)
METHOD_WORDS = {
    "fa": ("factor analysis", "Perturbs the common factors a factor analysis finds and the variables' own parts; "
                              "keeps means and correlations in expectation."),
    "pca": ("principal components", "Perturbs the principal components that carry each variable; keeps means and "
                                    "the covariance in expectation."),
    "magg": ("microaggregation plus noise", "Replaces each record by the mean of a group of at least k similar "
                                            "records (MDAV), then adds noise; keeps means exactly."),
    "rankswap": ("rank swapping", "Swaps each value with another record's value of close rank (within p % of the "
                                  "records); keeps every variable's values and distribution exactly."),
    "noise": ("correlated noise", "Adds noise with the data's own correlation structure; keeps means and "
                                  "correlations in expectation."),
    "pca_remove": ("removal of the largest principal components", "Removes the r largest components (D'Acquisto "
                                                                  "and Naldi) until a utility measure would fall "
                                                                  "below its stop."),
    "ipso": ("regression-preserving masking", "Redraws the sensitive variables given the public ones so that their "
                                              "least-squares regression on them is kept exactly (Burridge's IPSO)."),
    "shuffle": ("data shuffling", "Draws new sensitive values from a model given the public ones and hands the "
                                  "original values out in the order of the draws (Muralidhar and Sarathy)."),
    "cfa": ("conditional factor analysis", "Redraws the sensitive variables from a factor model conditioned on the "
                                           "public ones."),
    "qexchange": ("quantile exchange", "Keeps each record between the same regression quantiles of the sensitive "
                                       "variables given the public ones (0.1, 0.5 and 0.9 by default) and gives it the "
                                       "place within that band of another record of similar size."),
}

IDEAS = [
    ("prior", "", "What an intruder already knows before any release: the share of records whose value the other "
                  "(public) variables alone predict within the tolerance, by the best of several models fitted "
                  "without the record (regression, regression on the log scale, nearest neighbours, gradient "
                  "boosting, the mean, the percentiles)."),
    ("found by the release", "beyond the prior", "The share of records an intruder puts within the tolerance of "
                                                 "their true value with the release that no prior model gets: what "
                                                 "the release adds to what was known."),
    ("hits with the release", "", "The share of records the best intruder puts within the tolerance of their true "
                                  "value with the release, those known beforehand included: it is not the prior plus "
                                  "what the release finds more."),
    ("risk floors", "", "The limits a release must meet: enough of each variable perturbed, the original and the "
                        "released value not too correlated, and no intruder finding more than the stated share of "
                        "records beyond the prior, overall, in every size band and among the largest 1 %."),
    ("size band", "", "The records grouped by the size of the variable's original value (1 = smallest); the "
                      "largest 1 % are a band of their own, because large firms and incomes are the easiest to "
                      "recognise."),
    ("one record decides", "", "A band with fewer than about 10 records: each record is more than 10 % of it, so a "
                               "single record found decides whether the floor holds."),
    ("tolerance", "", "How close a guess must be to count as disclosure: within 5 % of the true value by default."),
    ("perturbed share", "", "The share of a variable's variance that the method changes; the rest is kept as it "
                            "was."),
    ("|cor(original, protected)|", "|cor|", "The correlation between a variable's original and released values: "
                                            "near 1, the released value nearly is the original."),
    ("selective protection", "", "Only the sensitive variables are protected; the public ones are released as "
                                 "they are and count as known to the intruder."),
    ("general protection", "", "Every numeric variable is protected; each is attacked knowing all the others."),
    ("set apart", "excluded", "Columns released unchanged and left out of the protection (codes, years, strata)."),
    ("identifier", "", "A column that names a record (a name, a firm number): dropped from the release."),
    ("strata", "", "Groups (region, industry) protected on their own: no record is mixed with another group's, "
                   "and each group's means are kept."),
    ("sampling weight", "weight", "How many population units a record stands for: released unchanged; weighted "
                                  "estimates are kept."),
    ("key variables", "keys", "Categories an intruder can learn elsewhere (region, sex, age band): a record whose "
                              "combination of key values is rare can be recognised."),
    ("k-anonymity", "k", "Every combination of key values is shared by at least k records."),
    ("sample unique", "", "A record that no other record shares its key values with."),
    ("local suppression", "", "Blanking a few key values so that every combination is shared by at least k "
                              "records (a blank matches every value)."),
    ("global recoding", "recoding", "Coarsening a key for every record: age in 10-year bands, small regions "
                                    "merged, top and bottom codes."),
    ("post-randomisation", "PRAM", "Changing a key's category at random with known probabilities that keep its "
                                   "distribution (sdcMicro's invariant PRAM)."),
    ("confidence-interval overlap", "CI overlap", "How much a coefficient's 95 % interval on the release overlaps "
                                                  "the one on the original (Karr et al.): 1 the same, 0 touching, "
                                                  "below 0 apart."),
    ("Kolmogorov-Smirnov distance", "KS", "The largest gap between the original and the released cumulative "
                                          "distributions: 0 the same."),
    ("Wasserstein distance", "", "How far values must move to turn one distribution into the other, in the "
                                 "variable's standard deviations."),
    ("seed", "", "The number that fixes the random draws: with it, the recipe and the original, a release is "
                 "rebuilt byte for byte. The one secret of a release: never publish it."),
    ("recipe", "", "The method, its settings and the seed as a file: it rebuilds the release exactly. Internal."),
    ("codebook", "", "Per variable: its role, the method, what is kept exactly and what in expectation, its "
                     "residual risk and, for each protected variable, what analysts keep (each analysis of the "
                     "battery with its figure, kept or MISSED, and its target). Safe to publish beside the release."),
    ("runs", "repetitions", "The same configuration protected with different seeds: how much one release may "
                            "differ from another, and how often the floors hold."),
]


def glossary() -> list:
    """Every glossary ``Term``: the ideas, then the registered methods, measures and intruders."""
    out = [Term(w, s, m, "idea") for w, s, m in IDEAS]
    for name in methods():
        label = method_info(name).label
        words, meaning = METHOD_WORDS.get(name, (label, "A plug-in method."))
        out.append(Term(words, label, meaning, "method"))
    for name in analyses():
        info = analysis_info(name)
        label = info.label
        words, short = (label.rsplit(" (", 1)[0], label.rsplit(" (", 1)[1].rstrip(")")) if label.endswith(")") \
            else (label, "")
        out.append(Term(words, short, _sentence(info.description), "measure"))
    for name in intruders():
        info = intruder_info(name)
        out.append(Term(f"{info.heading} intruder", "", _sentence(info.label + (f"; knows {info.knows}"
                                                                                if info.knows else "")),
                        "intruder"))
    return out


def method_words(name) -> str:
    """A method in words with its label in brackets: 'regression-preserving masking (IPSO)'."""
    label = method_info(name).label
    words = METHOD_WORDS.get(name, (label, ""))[0]
    return f"{words} ({label})" if words != label else label


def _sentence(text) -> str:
    t = str(text or "").strip()
    if t and not t[0].isalpha():
        t = "computed as " + t
    return (t[:1].upper() + t[1:] + ("" if t.endswith(".") else ".")) if t else ""


def tip(term) -> str:
    """The meaning of a term (its words, its abbreviation or a method's label; any case), for a
    tooltip; '' for an unknown term."""
    key = str(term).strip().lower()
    for t in glossary():
        if key in {t.words.lower(), t.short.lower(), t.title.lower()}:
            return f"{t.title}: {t.meaning}"
    return ""


KINDS = {"idea": "Ideas", "method": "Methods", "measure": "Measures", "intruder": "Intruders"}


def glossary_markdown() -> str:
    """The documentation's glossary page (``docs/glossary.md``), grouped by kind."""
    lines = ["# Glossary", "", "Every method, measure, intruder and idea the dashboard, the reports and the command "
             "line name, in plain words first. The dashboard's tooltips and the reports' glossary read the same "
             "source (`sdccore.report.glossary()`).", ""]
    terms = glossary()
    for kind, head in KINDS.items():
        lines += [f"## {head}", ""]
        lines += [f"- **{t.title}**: {t.meaning}" for t in sorted((t for t in terms if t.kind == kind), key=lambda t: t.words.lower())]
        lines.append("")
    return "\n".join(lines)


def glossary_html(text) -> str:
    """The report's glossary section: the terms whose words or abbreviation the report's text
    names, in plain words."""
    def names(t):  # the words anywhere (any case), the abbreviation as a word of its own
        return (re.search(r"(?<!\w)" + re.escape(t.words) + r"(?!\w)", text, flags=re.I) or
                len(t.short) > 1 and re.search(r"(?<!\w)" + re.escape(t.short) + r"(?!\w)", text))
    used = [t for t in glossary() if names(t)]
    if not used:
        return ""
    return ("<h2>Glossary</h2><dl>" + "".join(f"<dt><b>{html.escape(t.title)}</b></dt><dd>{html.escape(t.meaning)}"
                                              f"</dd>" for t in used) + "</dl>")
