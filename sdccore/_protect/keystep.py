"""The keys' own steps of ``protect`` (issue 40): the key, household and PRAM'd columns checked,
the published recodings, PRAM and local suppression applied to the assembled release, and the
household floor; with the note that says when public amounts released unchanged single records
out whatever the keys' k-anonymity."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .._core.validation import check_names

__all__ = []


def key_columns(data, static, sensitive):
    """The key variables, the household id and the PRAM'd columns, checked (released by the
    keys' own steps, never perturbed as data)."""
    cols = list(data.columns)
    keys = check_names(static.get("keys") or [], cols, "keys", "the columns of data")
    pram = check_names(static.get("pram") or [], cols, "pram", "the columns of data")
    for what, names in (("keys", keys), ("pram", pram)):
        if sensitive and set(names) & set(sensitive):
            raise ValueError(f"{what} and sensitive share {', '.join(sorted(set(names) & set(sensitive)))}; a key "
                             f"variable is recoded, post-randomised or suppressed, not perturbed as an amount: mark "
                             f"it as one or the other.")
    other = [c for c in (static.get("recode") or {}) if c not in keys]
    if other:
        raise ValueError(f"recode names {', '.join(other)}, which {'is' if len(other) == 1 else 'are'} not among the "
                         f"keys ({', '.join(keys)}); add {'it' if len(other) == 1 else 'them'} to keys or leave "
                         f"{'it' if len(other) == 1 else 'them'} out of recode.")
    hh = [static["household"]] if static.get("household") else []
    check_names(hh, cols, "household", "the columns of data")
    return list(dict.fromkeys(keys + pram + hh))


def recoded(data, recode):
    """``data`` with the keys' published recodings (``recode``: key -> rule or its dict) applied."""
    from .._keys.recoding import Recoding, recode as apply

    return apply(data, {c: r if isinstance(r, Recoding) else Recoding.from_dict(r) for c, r in recode.items()})


def keys_step(original, out, o, seed):
    """The keys' own steps on the assembled release ``out``, in order: the published recodings
    (deterministic), PRAM (the seed's "pram" stream), local suppression to k (deterministic).
    Returns (the release, notes, the key codes as the intruder reads them in the original
    (recoded as published) and as released, or None without keys)."""
    notes, view = [], original
    if o.get("recode"):
        from .._keys.recoding import Recoding, recode

        rules = {c: Recoding.from_dict(r) for c, r in o["recode"].items()}
        out, view = recode(out, rules), recode(original, rules)
        notes += [f"{c} recoded: {r.describe(original[c])}" for c, r in rules.items()]
    if o.get("pram"):
        from .._core.streams import child_seeds
        from .._keys.pram import pram

        pr = pram(out, o["pram"], pd=o["pram_pd"], alpha=o["pram_alpha"], rng=child_seeds(seed, "pram"))
        out = pr.data
        notes.append(pr.summary())
    if not o.get("keys"):
        return out, notes, None
    from .._keys.frequencies import joint_codes
    from .._keys.suggest import blank_warnings
    from .._keys.suppression import household_size_columns, local_suppression

    hh = o.get("household")
    linked = hh is not None and o.get("household_ids") != "drop"  # the release shows who lives together
    shown = household_size_columns(out, hh, skip=o["keys"]) if hh is not None and not linked else []
    if shown:  # a column released shows the household size: the keys' k-anonymity does not count it
        notes.append(f"{', '.join(shown)} show{'s' if len(shown) == 1 else ''} each person's household size (one "
                     f"value a household, one size a value) though the household ids are not released: an intruder "
                     f"who reads the size off {'it' if len(shown) == 1 else 'them'} uses it as a further key, which "
                     f"the {o['k_anonymity']}-anonymity of the keys does not count; fix: drop "
                     f"{'it' if len(shown) == 1 else 'them'} from the release (mark as identifier), or release new "
                     f"household ids (household_ids='new'), which counts the size as a key")
    sup = local_suppression(out, o["keys"], o["k_anonymity"], household=hh, household_size=linked)
    notes.append(sup.summary())
    notes += blank_warnings(out[list(o["keys"])], sup, uneven=False)  # the summary names uneven blanks
    out = sup.data
    if hh is not None and o.get("household_ids") == "new":
        out = _new_household_ids(out, hh, seed)
        notes.append(f"{hh}: each household given a new random number (its persons still share it)")
    elif hh is not None and not linked:
        out = out.assign(**{hh: pd.Series(pd.NA, index=out.index, dtype=object)})
        notes.append(f"{hh}: no household link released (the column is empty); the household variables were "
                     f"blanked for whole households")
    lone = singled_out(original, out, list(o["keys"]) + ([hh] if hh is not None else []))
    if lone:
        notes.append(lone)
    return out, notes, joint_codes(view, sup.data, o["keys"])


def singled_out(original, released, skip):
    """The note for numeric columns released unchanged (besides ``skip``: the keys, the household
    id) whose values single records out by themselves, or "": the keys' k-anonymity holds only
    against an intruder who knows the keys alone (a rent, a turnover or a weight to the cent is
    as good a key as a date of birth)."""
    cols = [c for c in original.columns if c not in skip and pd.api.types.is_numeric_dtype(original[c])
            and pd.api.types.is_numeric_dtype(released[c]) and original[c].nunique() > 1
            and np.array_equal(original[c].to_numpy(float), released[c].to_numpy(float), equal_nan=True)]
    if not cols:
        return ""
    lone = int((~released[cols].duplicated(keep=False)).sum())
    if not lone:
        return ""
    return (f"{', '.join(cols)} {'is' if len(cols) == 1 else 'are'} released unchanged and single{'s' if len(cols) == 1 else ''} "
            f"out {lone:,} of {len(released):,} records by {'itself' if len(cols) == 1 else 'themselves'}: the keys' "
            f"k-anonymity protects those records only from an intruder who does not know "
            f"{'it' if len(cols) == 1 else 'them'} (the risk beyond the prior assumes the public variables known); "
            f"to protect identities from one who does, make {'it a key' if len(cols) == 1 else 'them keys'} "
            f"(recoded into bands), or protect {'it' if len(cols) == 1 else 'them'} (sensitive)")


def household_floor(risk, o, codes, data):
    """With household ids released, a household whose make-up (its size and every member's keys as
    released) no other household shares is found by anyone who knows who lives there: a floor,
    named with the fix."""
    hh = o.get("household")
    if codes is None or hh is None or o.get("household_ids") == "drop":
        return risk
    from dataclasses import replace as _replace

    from .._keys.frequencies import household_codes
    from .._keys.risk import household_unique

    persons = int(household_unique(codes[1], household_codes(data, hh)).sum())
    if not persons:
        return risk
    v = (f"{hh}: {persons:,} persons live in households whose make-up (size and every member's released "
         f"{', '.join(o['keys'])}) no other household shares: anyone who knows who lives there finds them, "
         f"whatever each person's k-anonymity (floor: none); fix: household_ids='drop' (no household link "
         f"released), or coarser keys (recode)")
    return _replace(risk, violations=tuple(risk.violations) + (v,), failing=tuple(risk.failing) + (hh,))


def _new_household_ids(out, household, seed):
    """The household ids replaced by a random numbering 1..H (the seed's "household" stream);
    a missing id stays missing."""
    from .._core.streams import child_rng

    codes, uniq = pd.factorize(out[household], use_na_sentinel=True)
    new = child_rng(seed, "household").permutation(len(uniq)) + 1
    ids = pd.Series(np.where(codes >= 0, new[np.maximum(codes, 0)], 0), index=out.index)
    out = out.copy()
    out[household] = ids.astype("Int64").where(codes >= 0, pd.NA) if (codes < 0).any() else ids.astype(np.int64)
    return out
