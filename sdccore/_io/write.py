"""Writing the release file: formulas neutralised, identifiers dropped, rows shuffled
(``prepare_release``), and the CSV bytes the Download page and the command line write.
Nothing here writes to disk."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from .._core.validation import make_rng

__all__ = ["neutralize_formulas", "prepare_release", "release_csv", "csv_bytes"]


_FORMULA = re.compile(r"^[=+\-@\t\r]")


def neutralize_formulas(data: pd.DataFrame) -> pd.DataFrame:
    """Make text cells safe to open in a spreadsheet (CSV injection).

    Text cells starting with =, +, -, @, tab or CR get a leading apostrophe, so spreadsheet
    programs show them as text instead of running them.  Numbers are untouched.

    Parameters
    ----------
    data : DataFrame

    Returns
    -------
    DataFrame
        A copy.

    Examples
    --------
    >>> import pandas as pd, sdccore
    >>> sdccore.neutralize_formulas(pd.DataFrame({"t": ["=1+1", "ok"]}))["t"].tolist()
    ["'=1+1", 'ok']
    """
    out = data.copy()
    for c in out.columns:
        s = out[c]
        if pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
            continue
        mask = s.astype("string").str.match(_FORMULA).fillna(False).to_numpy(dtype=bool)
        if mask.any():
            out[c] = s.astype(object)
            out.loc[mask, c] = "'" + s[mask].astype(str)
    if any(isinstance(c, str) and _FORMULA.match(c) for c in out.columns):
        out.columns = ["'" + c if isinstance(c, str) and _FORMULA.match(c) else c for c in out.columns]
    return out


def prepare_release(protected: pd.DataFrame, drop=(), shuffle=False, rng=None, neutralize=True):
    """The file to publish: identifiers dropped, column order kept, rows optionally shuffled
    (the index is reset so record order and labels reveal nothing), formulas neutralised."""
    out = protected.drop(columns=[c for c in drop if c in protected.columns])
    if shuffle:
        g = np.random.default_rng(rng) if isinstance(rng, (list, tuple)) else make_rng(rng)
        out = out.iloc[g.permutation(len(out))]
    out = out.reset_index(drop=True)
    return neutralize_formulas(out) if neutralize else out


def release_csv(release: pd.DataFrame, sep: str = ",", decimal: str = ".") -> bytes:
    """The release as CSV bytes (UTF-8) in the separator and decimal mark of the original
    file, so that it opens as the original did (e.g. ';' and ',' in much of Europe)."""
    if sep == decimal:
        raise ValueError(f"sep and decimal are both {sep!r}; use different marks, e.g. sep=';' with decimal=','.")
    return csv_bytes(release, sep=sep, decimal=decimal)


def csv_bytes(table: pd.DataFrame, index=False, sep: str = ",", decimal: str = ".") -> bytes:
    """``table`` as CSV bytes, every field that holds a line break quoted: with a carriage
    return in a text cell the lines end in CRLF, so that the writer quotes fields holding a
    lone CR too (with '\n' endings Python's csv module leaves a lone CR unquoted and a reader
    splits the record there: 834 records read back as 1,112)."""
    text = [table[c] for c in table.columns if not pd.api.types.is_numeric_dtype(table[c])]
    if table.index.dtype == object and index:
        text.append(pd.Series(table.index))
    cr = any(s.astype("string").str.contains("\r", regex=False).fillna(False).any() for s in text) or any(
        "\r" in str(c) for c in table.columns)
    return table.to_csv(index=index, sep=sep, decimal=decimal, lineterminator="\r\n" if cr else "\n").encode("utf-8")
