"""Reading user files and checking them before protection; preparing the release file.

Nothing here writes to disk.  Messages name columns and count records; they never quote
cell values (the data are confidential).
"""

from __future__ import annotations

import csv
import io
import os
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import _decomp as dc
from ._validation import make_rng, numeric_columns

__all__ = ["read_table", "ReadResult", "inspect_data", "Problem", "prepare_release", "neutralize_formulas",
           "drop_incomplete_rows", "release_csv"]

SEPARATORS = (",", ";", "\t", "|")
MAX_COLUMNS = 2000
MAX_BYTES = 200 * 2**20  # as server.maxUploadSize in .streamlit/config.toml


@dataclass(frozen=True)
class ReadResult:
    data: pd.DataFrame
    sep: str | None
    decimal: str | None
    encoding: str | None
    notes: tuple = ()


def _decode(raw: bytes):
    if raw.startswith(b"\xef\xbb\xbf"):
        return raw[3:].decode("utf-8"), "utf-8 (with BOM)", ()
    try:
        return raw.decode("utf-8"), "utf-8", ()
    except UnicodeDecodeError:
        return (raw.decode("cp1252", errors="replace"), "windows-1252",
                ("the file is not UTF-8; it was read as Windows-1252 (Western European). "
                 "Check accented column names, or save the file as UTF-8",))


def _head_lines(text, k=200):
    """The first k lines, without splitting the whole (possibly 200 MB) text."""
    end = -1
    for _ in range(k):
        end = text.find("\n", end + 1)
        if end < 0:
            return text.splitlines()
    return text[:end].splitlines()


def _sniff_sep(head):
    sample = "\n".join(head[:50])
    try:
        return csv.Sniffer().sniff(sample, delimiters="".join(SEPARATORS)).delimiter
    except csv.Error:
        counts = {s: sample.count(s) for s in SEPARATORS}
        best = max(counts, key=counts.get)
        return best if counts[best] > 0 else ","


_NUM_COMMA = re.compile(r"^\s*[-+]?\d{1,3}(\.\d{3})*,\d+\s*$|^\s*[-+]?\d+,\d+\s*$")


def _guess_decimal(head, sep):
    if sep == ",":
        return "."
    cells = [c for line in head[1:200] for c in line.split(sep)]
    comma = sum(bool(_NUM_COMMA.match(c.strip('"'))) for c in cells)
    return "," if comma > 0 else "."


def _to_number(s: pd.Series, decimal: str):
    """Text to numbers: spaces and thousands separators dropped, the decimal mark made '.'."""
    t = s.astype("string").str.strip().str.replace("\u00a0", "", regex=False).str.replace(" ", "", regex=False)
    t = t.str.strip('"').str.strip("'")
    if decimal == ",":
        t = t.str.replace(".", "", regex=False).str.replace(",", ".", regex=False)
    else:
        t = t.str.replace(",", "", regex=False)
    return pd.to_numeric(t, errors="coerce")


def _convert_text_numbers(df, decimal):
    """Convert text columns that are numbers written with separators or quotes."""
    notes = []
    for c in list(df.columns):
        s = df[c]
        if pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
            continue
        present = s.notna() & (s.astype("string").str.strip() != "")
        if present.sum() == 0:
            continue
        num = _to_number(s, decimal)
        ok = num.notna() & present
        share = ok.sum() / present.sum()
        if share == 1.0:
            df[c] = num.where(present)
            notes.append(f"column {c!r}: numbers written as text (quotes, thousands separators or decimal commas) were converted")
    return notes


def _excel_formula_notes(raw, df):
    """Columns whose cells are formulas without stored results (files written by programs
    that do not compute formulas) come out empty; say so."""
    try:
        from openpyxl import load_workbook

        ws = load_workbook(io.BytesIO(raw), read_only=True, data_only=False).worksheets[0]
        rows = ws.iter_rows(values_only=True)
        header = next(rows, ())
        formula_cols = set()
        for r in rows:
            for name, v in zip(header, r):
                if isinstance(v, str) and v.startswith("="):
                    formula_cols.add(str(name))
    except Exception:  # the table itself was read; this is only a hint
        return []
    empty = [c for c in df.columns if str(c) in formula_cols and df[c].isna().all()]
    if empty:
        return [f"column(s) {', '.join(empty)} hold formulas without stored results, so they are empty; "
                f"open and save the file in Excel or LibreOffice (which compute them), or export CSV"]
    return []


def read_table(source, filename: str = "data.csv", sep: str | None = None, decimal: str | None = None) -> ReadResult:
    """Read CSV/TSV, Excel (.xlsx) or Parquet from bytes (or a path) into a DataFrame.

    CSV: encoding UTF-8 (BOM accepted; otherwise Windows-1252 with a note), separator
    detected among , ; tab | unless given, decimal mark detected (',' when numbers such
    as 1.234,5 appear) unless given; numbers stored as text with thousands separators or
    quotes are converted.  Raises ValueError with a plain message on unreadable input.
    """
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as fh:
            raw = fh.read()
        filename = str(source)
    elif hasattr(source, "read"):
        raw = source.read()
    else:
        raw = bytes(source)
    name = filename.lower()
    if len(raw) == 0:
        raise ValueError("the file is empty; choose a file with a header row and records.")
    if len(raw) > MAX_BYTES:
        raise ValueError(f"the file is {len(raw) / 2**20:.0f} MB; the limit is {MAX_BYTES // 2**20} MB. "
                         f"Select the records or variables you need before uploading.")
    notes = []
    if name.endswith((".xlsx", ".xlsm", ".xls")):
        try:
            df = pd.read_excel(io.BytesIO(raw), engine="openpyxl" if not name.endswith(".xls") else None)
        except Exception as exc:
            raise ValueError(f"the Excel file could not be read ({type(exc).__name__}); save it again as .xlsx or CSV.") from None
        notes.append("Excel: the first sheet was read; formulas were read as their last computed values")
        notes.extend(_excel_formula_notes(raw, df))
        enc = sep_used = dec_used = None
    elif name.endswith((".parquet", ".pq")):
        try:
            df = pd.read_parquet(io.BytesIO(raw))
        except Exception as exc:
            raise ValueError(f"the Parquet file could not be read ({type(exc).__name__}).") from None
        enc = sep_used = dec_used = None
    else:
        if b"\x00" in raw[:4096]:
            raise ValueError("this looks like a binary file, not CSV text; upload CSV, Excel (.xlsx) or Parquet.")
        text, enc, enc_notes = _decode(raw)
        notes.extend(enc_notes)
        if not text.strip():
            raise ValueError("the file is empty; choose a file with a header row and records.")
        head = _head_lines(text)
        sep_used = sep or _sniff_sep(head)
        dec_used = decimal or _guess_decimal(head, sep_used)
        try:
            df = pd.read_csv(io.StringIO(text), sep=sep_used, decimal=dec_used, skipinitialspace=True,
                             thousands=None, low_memory=False)
        except pd.errors.EmptyDataError:
            raise ValueError("the file has no columns; check that it is a CSV with a header row.") from None
        except (pd.errors.ParserError, csv.Error) as exc:
            line = re.search(r"line (\d+)", str(exc))
            where = f" near line {line.group(1)}" if line else ""
            raise ValueError(f"the file could not be read as CSV{where}: rows have different numbers of fields. "
                             f"Check the separator (detected {sep_used!r}) and quoting.") from None
        header = next(csv.reader(io.StringIO(head[0]), delimiter=sep_used), [])
        names = [h.strip() for h in header]
        dup = sorted({h for h in names if h and names.count(h) > 1})
        if dup:
            raise ValueError(f"duplicated column names: {', '.join(dup)}; rename the columns so that every name is unique.")
        notes.extend(_convert_text_numbers(df, dec_used))
    empty_unnamed = [c for c in df.columns if str(c).startswith("Unnamed: ") and df[c].isna().all()]
    if empty_unnamed:
        df = df.drop(columns=empty_unnamed)
        notes.append(f"{len(empty_unnamed)} empty column(s) without a name (a trailing separator?) were dropped")
    stripped = [str(c).strip() for c in df.columns]
    if stripped != [str(c) for c in df.columns]:
        if len(set(stripped)) == len(stripped):
            notes.append("spaces around column names were removed")
            df.columns = stripped
    df.columns = [str(c) for c in df.columns]
    if df.shape[1] > MAX_COLUMNS:
        raise ValueError(f"the file has {df.shape[1]} columns; at most {MAX_COLUMNS} can be handled. "
                         f"Select the variables to protect before uploading.")
    if df.shape[0] == 0:
        raise ValueError("the file has a header but no records.")
    return ReadResult(df, sep_used, dec_used, enc, tuple(notes))


@dataclass(frozen=True)
class Problem:
    kind: str          # non_numeric, missing, infinite, constant, linear_combination, duplicated_names, size
    columns: tuple
    message: str
    fix: str
    rows: int = 0
    blocking: bool = True


def inspect_data(data: pd.DataFrame, protect_columns=None):
    """Problems that stop or distort protection, each with its fix, in plain words.

    ``protect_columns``: the columns the user wants protected (sensitive and public);
    default: every numeric column.
    """
    out = []
    dup = data.columns[data.columns.duplicated()].unique().tolist()
    if dup:
        out.append(Problem("duplicated_names", tuple(dup), f"duplicated column names: {', '.join(map(str, dup))}",
                           "rename the columns so that every name is unique"))
    num = numeric_columns(data.loc[:, ~data.columns.duplicated()])
    cols = [c for c in (protect_columns if protect_columns is not None else num)]
    for c in cols:
        if c not in data.columns:
            continue
        s = data[c]
        if isinstance(s, pd.DataFrame):
            continue
        if c not in num:
            present = s.notna() & (s.astype("string").str.strip() != "")
            bad = int((present & pd.to_numeric(s, errors="coerce").isna()).sum())
            out.append(Problem("non_numeric", (c,), f"column {c!r} has {bad} non-numeric value(s)",
                               "correct those cells, or give the column the role 'excluded' or 'identifier'", bad))
    for c in data.columns:
        if c in num or c in cols or isinstance(data[c], pd.DataFrame):
            continue
        s = data[c]
        present = s.notna() & (s.astype("string").str.strip() != "")
        parsed = pd.to_numeric(s.where(present), errors="coerce").notna()
        if present.sum() and 0.5 <= parsed.sum() / present.sum() < 1:
            bad = int((present & ~parsed).sum())
            out.append(Problem("non_numeric", (c,), f"column {c!r} is mostly numbers but has {bad} non-numeric value(s), "
                               f"so it is treated as text and released unchanged",
                               "correct those cells and upload again if the column should be protected", bad, blocking=False))
    numeric_cols = [c for c in cols if c in num]
    if numeric_cols:
        X = data[numeric_cols].to_numpy(dtype=float)
        nan, inf = np.isnan(X), np.isinf(X)
        for kind, mask, what, fix in (("missing", nan, "missing", " (or impute them before uploading)"),
                                      ("infinite", inf, "infinite", "")):
            if mask.any():
                rows = int(mask.any(axis=1).sum())
                which = [numeric_cols[j] for j in np.flatnonzero(mask.any(axis=0))]
                out.append(Problem(kind, tuple(which), f"{rows} record(s) have {what} values (in {', '.join(which[:8])})",
                                   f"drop those {rows} records{fix}", rows))
        ok = ~(nan | inf).any(axis=1)
        Xo = X[ok]
        with np.errstate(over="ignore", invalid="ignore"):
            overflow = [numeric_cols[j] for j in range(Xo.shape[1]) if not np.isfinite(Xo[:, j].sum())]
        if overflow:
            out.append(Problem("overflow", tuple(overflow), f"values so large that their sums overflow in {', '.join(overflow)}",
                               "rescale those columns (e.g. to thousands or millions) before uploading"))
            return out
        if Xo.shape[0] >= 1:
            const = [numeric_cols[j] for j in range(Xo.shape[1]) if np.ptp(Xo[:, j]) == 0]
            if const:
                out.append(Problem("constant", tuple(const), f"constant column(s): {', '.join(const)}",
                                   "give them the role 'excluded' (they are released unchanged) or drop them"))
            var = [j for j in range(Xo.shape[1]) if np.ptp(Xo[:, j]) > 0]
            if len(var) >= 2 and Xo.shape[0] >= 3:
                _, sd, _, R = dc.standardize_with_correlation(Xo[:, var])
                _, deps = dc.linear_dependencies(R, sd)
                for d in deps:
                    terms = [numeric_cols[var[i]] for i, b in zip(d.predictors, d.beta) if abs(b) > 1e-9]
                    tgt = numeric_cols[var[d.target]]
                    out.append(Problem("linear_combination", (tgt, *terms),
                                       f"{tgt} is an exact linear combination of {', '.join(terms)}",
                                       f"nothing to do: {tgt} is left out of the decomposition and rebuilt from the "
                                       f"protected columns, so the identity still holds in the release", blocking=False))
    if len(numeric_cols) >= 2 and data.shape[0] <= len(numeric_cols):
        out.append(Problem("size", tuple(numeric_cols), f"{data.shape[0]} records for {len(numeric_cols)} variables to protect",
                           "protection needs more records than variables: protect fewer variables (give some the role "
                           "'excluded') or use a file with more records"))
    if len(numeric_cols) < 2:
        out.append(Problem("size", tuple(numeric_cols), f"{len(numeric_cols)} numeric column(s) to protect",
                           "at least 2 are needed: give numeric columns the role 'sensitive' or 'public' "
                           "(if numbers were read as text, choose the separator and decimal mark by hand)"))
    if data.shape[0] < 3:
        out.append(Problem("size", (), f"{data.shape[0]} record(s)", "at least 3 records are needed"))
    return out


def drop_incomplete_rows(data: pd.DataFrame, columns):
    """Rows with a missing or infinite value in ``columns`` removed; returns (frame, count)."""
    X = data[list(columns)].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(X).all(axis=1)
    return data.loc[~bad].copy(), int(bad.sum())


_FORMULA = re.compile(r"^[=+\-@\t\r]")


def neutralize_formulas(data: pd.DataFrame) -> pd.DataFrame:
    """Text cells starting with =, +, -, @, tab or CR get a leading apostrophe, so spreadsheet
    programs show them as text instead of running them (CSV injection).  Numbers untouched."""
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
    return release.to_csv(index=False, sep=sep, decimal=decimal).encode("utf-8")
