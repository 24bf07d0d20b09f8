"""What a violation of the risk floors says: the fix in the failing
method's own setting (p for rank swapping, k for M-AGG, the factors for FA), naming only methods
the dashboard offers.  The measuring is in ``_safety`` and ``_intruders``; this module only
words it."""

from __future__ import annotations

from .._methods import REGISTRY

__all__ = []

# the methods that leave the public variables unchanged, by what they keep
UNCHANGED_PUBLIC = "IPSO (keeps the regression on the public variables), rank swapping or M-AGG of the sensitive " \
                   "variables alone"


def _fix(floor, method=None):
    info = REGISTRY.get(method) if isinstance(method, str) else None
    if floor in ("perturbed share", "|cor|", "closeness") and info is not None and info.stronger:
        # what strengthens the method, in its own settings (the registry says)
        tail = "; if public variables predict it closely, mark them sensitive too" if floor == "closeness" and \
            info.public_hint else ""
        return info.stronger + tail
    return {
        "perturbed share": "perturb the factors that carry it (factors='auto' or add them to the mask), "
                           "or choose a method that protects it",
        "|cor|": "perturb more of it: more factors, a larger group size k, or more noise",
        "closeness": "perturb more of it (more factors, larger k, more noise) or use another method; if public "
                     "variables predict it closely, mark them sensitive too",
        "reconstruction selective": f"use a method that leaves the public variables unchanged: {UNCHANGED_PUBLIC} "
                                    f"(FA and PCA change the public variables by an amount that reveals the sensitive "
                                    f"change), or mark the changed public variables sensitive too",
        "reconstruction": "make the change of a record depend on more than the other variables show: perturb as many "
                          "factors as variables (PCA with components='all', or FA with residuals='swap_rows'), or "
                          "perturb more strongly (more noise, larger k)",
        "assignment": "the released values are (close to) the original values in another order, and what the "
                      "intruder knows orders them: no swap window helps (every permutation gives the same value "
                      "set); use a method that changes the values themselves",
        "residual": "the released values around the fit the release publishes are (close to) the original "
                    "residuals in another order, and what the intruder knows orders them; use a method that "
                    "changes the residuals themselves",
        "identity": "protect the columns of the identity together: mark them sensitive too, so that the identity "
                    "no longer solves for it from released values",
        "shrinkage": "the largest records' released values fall short of their own by a ratio (or an amount) the "
                     "release itself shows; keep IPSO's largest records spread (top_band='random', the default, "
                     "'ranks' or 'spread'), try another seed, or use a method that redraws the largest values "
                     "themselves",
        "partner": "another record's released value, that of the record whose prediction fits the target's "
                   "released row, lands near the target's own value (rank swapping in pairs hands the target's own "
                   "value to its partner's row); exchange the values by shifted ranks (rank swapping's "
                   "exchange='shifted', the default), a larger window p, or use a method that changes the values themselves",
        "replay": "the method made again on the release shows how it moves a record of that size, and undoing "
                  "that move lands near the record's own value; perturb more strongly (more noise, a larger "
                  "group size k, more factors), try another seed, or use a method that changes the values themselves",
        "band_mates": "a record's own place in its band is one of its block-mates' released places, and its band and "
                      "block can be read from the release; hand the places round in larger blocks (the quantile "
                      "exchange's block), keep fewer quantiles, or use a method that changes the values themselves",
    }[floor]


# the methods a value-set or residual violation may send the custodian to (never the one that failed)
CHANGE_VALUES = (("magg", "M-AGG with noise"), ("cfa", "FA-cond"), ("ipso", "IPSO"))


def _other_methods(method, what):
    """The value-changing methods other than ``method`` (a residual violation also rules out
    IPSO, whose residuals are the original ones), in words."""
    skip = {method} | ({"ipso"} if what == "residual" else set())
    names = [label for key, label in CHANGE_VALUES if key not in skip and key in REGISTRY]
    return " (" + ", or ".join(names) + ")" if names else ""


# the phrases after which a fix lists value-changing methods (``_other_methods``)
_LISTS = ("changes the values themselves", "changes the residuals themselves", "redraws the largest values themselves",
          "moves each value further from its own")


def without_failed(text, failed):
    """A violation's words with the methods in ``failed`` (registry names: every method a
    comparison ran, when none of them met the floors) taken out of the value-changing methods
    its fix sends the custodian to; where none is left, it says they broke a floor too.  A
    comparison's "no release" message must not name a method that just failed as the fix."""
    labels = dict(CHANGE_VALUES)
    gone = {labels[k] for k in failed if k in labels}
    for phrase in _LISTS:
        i = text.find(phrase + " (")
        if i < 0:
            continue
        a = i + len(phrase) + 2
        b = text.find(")", a)
        names = text[a:b].split(", or ")
        keep = [x for x in names if x not in gone]
        if keep == names:
            continue
        text = (text[:a] + ", or ".join(keep) + text[b:] if keep else
                text[:i + len(phrase)] + " (each such method this comparison ran broke a floor too)" + text[b + 1:])
    return text


# general protection broken by an intruder who knows the method: what does pass
SELECTIVE_HINT = ("; or protect only the variables that are sensitive (mark them sensitive: selective protection "
                  "keeps the others as they are)")


def _intruder_fix(what, selective, identity, names, method=None):
    # the same residuals handed out by size: the residual intruder's fix
    what = "residual" if what == "residual_size" else what
    words = _intruder_words(what, selective, identity, names, method)
    if not selective and what in ("regression", "residual", "release_fit", "correction"):
        words += SELECTIVE_HINT
    return words


def _intruder_words(what, selective, identity, names, method=None):
    if what in ("assignment", "residual"):
        words = _fix(what)
        info = REGISTRY.get(method) if isinstance(method, str) else None
        if what == "assignment" and info is not None and not info.keeps_values:
            # a method that draws new values (FA-cond, IPSO, M-AGG): no permutation to speak of
            words = ("the released values, taken as a set, are close to the original ones, and what the intruder "
                     "knows orders them: handed out in that order they land near the records' own values; use a "
                     "method that moves each value further from its own")
        return words + _other_methods(method, what) + ("; or mark more of the variables that predict it "
                                                       "sensitive" if selective else "")
    if what == "shrinkage":
        return _fix(what) + _other_methods(method, "residual")
    if what in ("replay", "partner", "band_mates"):
        return _fix(what) + _other_methods(method, what)
    if what == "correction":
        return _fix("reconstruction")
    if what == "reconstruction":
        return _fix("reconstruction selective" if selective else "reconstruction")
    if what == "identity" and identity is not None:
        cols = f"{', '.join(names[k] for k in identity[1])}: the identity holds exactly for {identity[3]:.0%} of records"
        if selective:
            return f"{_fix('identity')} ({cols})"
        return ("its parts are released close enough that the identity gives it back: perturb them more strongly "
                "(more factors or components, more noise, larger k), or leave the total out of the release so that "
                f"analysts rebuild it from the protected parts ({cols})")
    if what == "identity":
        return _fix(what)
    return _fix("closeness", method)


def intruder_fix(what, *, selective, method=None, names=(), identity=None):
    """The built-in intruders' fix (``registry.IntruderInfo.fix``)."""
    return _intruder_fix(what, selective, identity, names, method)
