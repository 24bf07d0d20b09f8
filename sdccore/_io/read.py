"""Reading user files (``read_table``): formats, separators, decimal marks, encodings, numbers
stored as text, missing marks, size limits.  Checking them is ``_inspect``; writing the
release file is ``_writing`` (its names are re-exported here).

Nothing here writes to disk.  Messages name columns and count records; they never quote
cell values (the data are confidential).
"""

from __future__ import annotations

import csv
import io
import os
import re
from dataclasses import dataclass, field

from decimal import Decimal as decimal_type

import pandas as pd


from .limits import binary_as_text, budget, check_values, check_xlsx_zip, describe, header_fields, long_line, size_text, unplain_columns
from .cells import MISSING_MARKERS, _NUM_COMMA, _clean_cells, _number_cells, _parse_core, _to_number, looks_numeric
from .write import csv_bytes, neutralize_formulas, prepare_release, release_csv  # noqa: F401  (re-exported)

__all__ = ["read_table", "ReadResult"]

SEPARATORS = (",", ";", "\t", "|")
MAX_COLUMNS = 2000
EMPTY_SHARE = 0.5  # a numeric column with at least this share missing is "mostly empty"
MOSTLY_NUMERIC = 0.5  # a text column with at least this share of number cells is "mostly numbers"
MAX_BYTES = 200 * 2**20  # as server.maxUploadSize in .streamlit/config.toml
MAX_LINE_BYTES = 4 * 2**20  # a CSV line (a record of 2,000 columns of 2,000 characters); pandas needs 10x that
MAX_VALUE_CHARS = 1_000_000  # one cell's text (a quoted value may span lines)
SNIFF_CHARS = 1 << 20  # the separator and decimal-mark guesses look at the first lines within this


@dataclass(frozen=True)
class ReadResult:
    """What ``read_table`` returns.

    Attributes
    ----------
    data : DataFrame
        The records.
    sep, decimal : str or None
        The separator and decimal mark used (None for Excel and Parquet).
    encoding : str or None
        The text encoding used (None for Excel and Parquet).
    notes : tuple of str
        What was detected or converted, in words (for the user to check).
    format : str
        'csv', 'xlsx', 'parquet', 'sav' (SPSS), 'dta' (Stata), 'sas7bdat' or 'xpt' (SAS).
    labels : dict
        Column -> variable label (SPSS, Stata and SAS files), else empty.
    value_labels : dict
        Column -> {value: label} (SPSS and Stata files), else empty.
    """
    data: pd.DataFrame
    sep: str | None
    decimal: str | None
    encoding: str | None
    notes: tuple = ()
    format: str = "csv"
    labels: dict = field(default_factory=dict)
    value_labels: dict = field(default_factory=dict)


def _decode(raw: bytes):
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff") or _utf16_without_bom(raw):
        enc = "utf-16" if raw[:2] in (b"\xff\xfe", b"\xfe\xff") else "utf-16-le"
        try:
            return raw.decode(enc), "utf-16", ("the file is UTF-16 text; it was read as such",)
        except UnicodeDecodeError:
            raise ValueError("the file looks like UTF-16 text but does not decode; save it as UTF-8 CSV.") from None
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
    sample = "\n".join(budget(head[:50], SNIFF_CHARS))  # csv.Sniffer is quadratic in long lines
    try:
        return csv.Sniffer().sniff(sample, delimiters="".join(SEPARATORS)).delimiter
    except csv.Error:
        counts = {s: sample.count(s) for s in SEPARATORS}
        best = max(counts, key=counts.get)
        return best if counts[best] > 0 else ","


def _guess_decimal(head, sep):
    if sep == ",":
        return "."
    cells = [c for line in budget(head[1:200], 2 * SNIFF_CHARS) for c in line.split(sep)]
    comma = sum(bool(_NUM_COMMA.match(c.strip('"'))) for c in cells)
    return "," if comma > 0 else "."


def _convert_text_numbers(df, decimal):
    """Convert text columns that are numbers written as text; say what was read and how.

    A column is converted when every cell is a number under the file's decimal convention
    or a missing-value marker.  A column whose cells are numbers only under the other
    convention (e.g. "920,6" in a comma-separated file) is ambiguous and left as text,
    with a note: it could be read two ways."""
    notes = []
    for c in list(df.columns):
        s = df[c]
        if pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
            continue
        if s.dtype == object and s.map(lambda v: isinstance(v, decimal_type)).any():
            vals = pd.to_numeric(s.map(lambda v: float(v) if isinstance(v, decimal_type) else v), errors="coerce")
            if vals.notna().sum() == s.notna().sum():
                df[c] = vals.astype(float)
                notes.append(f"column {c!r}: exact decimals were converted to floating point (about 15 significant digits)")
                continue
        core, paren, cur, pct, missing = _clean_cells(s)
        present = ~missing
        if present.sum() == 0:
            continue
        num = _parse_core(core, decimal)
        ok = num.notna() & present
        if ok.sum() == present.sum():
            df[c] = num.where(~paren, -num).where(present).astype(float)
            how = []
            if core.str.contains("[,'\u00a0\u202f\u2009\u2007 ]" if decimal == "." else "[,.'\u00a0\u202f\u2009\u2007 ]",
                                 regex=True).fillna(False).any():
                how.append("thousands separators or decimal commas")
            if cur.any():
                how.append("currency signs")
            if pct.any():
                how.append("percent signs (values kept in percent: 12% is 12)")
            if paren.any():
                how.append("negatives in parentheses")
            if s.astype("string").str.contains("\u2212", regex=False).fillna(False).any():
                how.append("Unicode minus signs")
            if not how:
                how.append("quotes")
            notes.append(f"column {c!r}: numbers written as text were converted ({', '.join(how)})")
            marked = int((missing & s.notna()).sum())
            if marked:
                notes.append(f"column {c!r}: {marked} cell(s) holding a missing-value mark ('-', '.', 'NA', 'n/a', ...) "
                             f"are read as missing")
            continue
        other = _parse_core(core, "," if decimal == "." else ".")
        if ((ok | other.notna()) & present).sum() == present.sum() and (other.notna() & ~ok & present).any():
            mark = "decimal comma" if decimal == "." else "decimal point"
            notes.append(f"column {c!r}: some numbers could be read two ways (a {mark}, or a thousands separator), "
                         f"so the column was left as text; choose the decimal mark by hand, or correct the file")
    return notes


def _excel_formula_notes(raw, df, sheet=None):
    """Columns whose cells are formulas without stored results (files written by programs
    that do not compute formulas) come out empty; say so."""
    try:
        from openpyxl import load_workbook

        wb = load_workbook(io.BytesIO(raw), read_only=True, data_only=False)
        ws = wb[sheet] if sheet is not None else wb.worksheets[0]
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


MAX_CELLS = 20_000_000        # records x columns held in memory (160 MB as float64)
MAX_EXCEL_CELLS = 1_000_000   # Excel reads at about 17 microseconds a cell (measured): 1 million is ~17 s
MAX_UNPACKED = 1 << 30        # bytes an .xlsx may unpack to
MAX_SHEET_BYTES = 200 * 2**20  # bytes one XML part (a sheet) may unpack to: 1 million cells are 20-60 MB


_SAS7BDAT_MAGIC = bytes.fromhex("000000000000000000000000c2ea8160b31411cfbd92080009c7318c181f1011")
STAT_FORMATS = {"sav": "SPSS", "dta": "Stata", "sas7bdat": "SAS", "xpt": "SAS transport"}


def _kind(raw: bytes, name: str) -> str:
    """What the bytes are, whatever the file is called: xlsx, xls, parquet, sav, dta,
    sas7bdat, xpt, text or binary."""
    if raw[:4] in (b"$FL2", b"$FL3"):
        return "sav"
    if raw[:11] == b"<stata_dta>" or (name.endswith(".dta") and raw[:1] in (b"\x71", b"\x72", b"\x73")):
        return "dta"
    if raw[:32] == _SAS7BDAT_MAGIC:
        return "sas7bdat"
    if raw[:20] == b"HEADER RECORD*******" and raw[20:24] in (b"LIBR", b"LIBV"):
        return "xpt"
    if raw[:4] == b"PK\x03\x04":
        return "xlsx"
    if raw[:8] == b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1":
        return "xls"
    if raw[:4] == b"PAR1":
        return "parquet"
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff") or _utf16_without_bom(raw):
        return "text"
    return "binary" if b"\x00" in raw[:4096] else "text"


def _utf16_without_bom(raw: bytes) -> bool:
    head = raw[:4096]
    return len(head) >= 4 and head[1::2].count(0) > 0.9 * len(head[1::2]) and head[0::2].count(0) == 0


def _too_many(rows, cols, limit, what):
    cells = rows * cols
    if cells > limit:
        raise ValueError(f"the {what} has {rows:,} records x {cols:,} columns ({cells / 1e6:.1f} million values); at most "
                         f"{limit / 1e6:.0f} million can be read here. Select the records or variables you need, or "
                         f"save the file as CSV and use the command line (python -m sdccore).")


def _too_big(size):
    return ValueError(f"the file is {size / 2**20:.0f} MB or more; the limit is {MAX_BYTES // 2**20} MB. Protect a "
                      f"sample here and apply its recipe to the whole file with --engine dask.")


def read_bounded(path):
    """A file's bytes, never more than MAX_BYTES: a regular file's size is checked before it
    is read (a 2 GB file is refused without being read); a device, FIFO or stream
    (/dev/zero, ``yes |``) is read in chunks and refused past the limit."""
    import stat as _stat

    with open(path, "rb") as fh:
        st_ = os.fstat(fh.fileno())
        if _stat.S_ISREG(st_.st_mode) and st_.st_size > MAX_BYTES:
            raise _too_big(st_.st_size)
        if _stat.S_ISREG(st_.st_mode):  # one read: no chunks joined (a second copy of the file)
            raw = fh.read(MAX_BYTES + 1)
            if len(raw) > MAX_BYTES:
                raise _too_big(len(raw))
            return raw
        return _read_stream(fh)


def _read_stream(fh):
    chunks, total = [], 0
    while True:
        chunk = fh.read(min(1 << 20, MAX_BYTES + 1 - total))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > MAX_BYTES:
            raise _too_big(total)


def _read_parquet(raw):
    """Parquet, its expanded size checked before any value is unpacked: text stored as a
    dictionary (1M cells of one 2,000-character string in a 221 KB file) is read as indices
    into the dictionary first, and its size as strings computed from them."""
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        pf = pq.ParquetFile(io.BytesIO(raw))
        meta = pf.metadata
    except Exception as exc:
        raise ValueError(f"the Parquet file could not be read ({type(exc).__name__}).") from None
    _too_many(meta.num_rows, meta.num_columns, MAX_CELLS, "Parquet file")  # before anything is unpacked
    nested = unplain_columns(pf.schema_arrow)
    if nested:
        raise ValueError(f"the Parquet file has column(s) {describe(nested)} holding lists, structs or maps, not one "
                         f"value a cell; flatten them into plain columns, or drop them, before reading.")
    text = [f.name for f in pf.schema_arrow if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
            or pa.types.is_binary(f.type) or pa.types.is_large_binary(f.type)]
    try:
        table = pq.read_table(io.BytesIO(raw), read_dictionary=text or None)
        size = 0
        for col in table.columns:
            for chunk in col.chunks:
                if pa.types.is_dictionary(chunk.type):
                    lengths = pc.binary_length(chunk.dictionary).fill_null(0)
                    taken = pc.take(lengths, chunk.indices.fill_null(0))
                    size += int(pc.sum(taken).as_py() or 0) + 50 * len(chunk)  # + a Python string's own cost
                elif pa.types.is_string(chunk.type) or pa.types.is_binary(chunk.type) or \
                        pa.types.is_large_string(chunk.type) or pa.types.is_large_binary(chunk.type):
                    size += int(pc.sum(pc.binary_length(chunk).fill_null(0)).as_py() or 0) + 50 * len(chunk)
                else:
                    size += chunk.nbytes
        if size > MAX_BYTES:
            raise _too_big(size)
        return binary_as_text(table).to_pandas()
    except ValueError:
        raise
    except Exception as exc:
        raise ValueError(f"the Parquet file could not be read ({type(exc).__name__}).") from None


def _read_excel(raw):
    """The first sheet that holds data; sizes checked from the workbook before reading;
    duplicated names refused as in CSV; other sheets named in a note."""
    check_xlsx_zip(raw, MAX_UNPACKED, MAX_EXCEL_CELLS, MAX_SHEET_BYTES)
    try:
        from openpyxl import load_workbook

        wb = load_workbook(io.BytesIO(raw), read_only=True, data_only=True)
    except Exception as exc:
        raise ValueError(f"the Excel file could not be read ({type(exc).__name__}); save it again as .xlsx or CSV.") from None
    try:
        with_data = []
        for ws in wb.worksheets:
            first = next(ws.iter_rows(min_row=1, max_row=1, values_only=True), ())
            if any(v is not None for v in first):
                with_data.append(ws)
        if not with_data:
            raise ValueError("the Excel file has no data on any sheet; choose a file with a header row and records.")
        ws = with_data[0]
        # no check of the sheet's <dimension> here: some writers leave it stale (A1:XFD1048576 on
        # one row), and check_xlsx_zip has counted the cells themselves
        header = [v for v in next(ws.iter_rows(min_row=1, max_row=1, values_only=True))]
        names = [str(v).strip() for v in header if v is not None]
        dup = sorted({h for h in names if names.count(h) > 1})
        if dup:
            raise ValueError(f"duplicated column names: {', '.join(dup)}; rename the columns so that every name is unique.")
        sheet, others = ws.title, [w.title for w in with_data[1:]]
    finally:
        wb.close()
    try:
        df = pd.read_excel(io.BytesIO(raw), sheet_name=sheet, engine="openpyxl")
    except Exception as exc:
        raise ValueError(f"the Excel file could not be read ({type(exc).__name__}); save it again as .xlsx or CSV.") from None
    _too_many(df.shape[0], df.shape[1], MAX_EXCEL_CELLS, "Excel sheet")
    notes = [f"Excel: sheet {sheet!r} was read" + (" (the sheets before it are empty)" if wb.sheetnames[0] != sheet else "")
             + "; formulas were read as their last computed values"]
    if others:
        notes.append(f"Excel: the workbook has other sheets with data ({', '.join(map(repr, others[:5]))}) that were "
                     f"not read; put the data you want on one sheet, first, or save it as CSV")
    notes.extend(_excel_formula_notes(raw, df, sheet))
    return df, notes


def _read_stat(raw, kind):
    """SPSS, Stata and SAS files through pyreadstat (from memory, nothing written to disk):
    (data, variable labels, value labels, notes).  Value labels are not applied: the codes
    stay numbers, and the labels mark the column as categorical (``suggest_roles``)."""
    import pyreadstat

    reader = {"sav": pyreadstat.read_sav, "dta": pyreadstat.read_dta, "sas7bdat": pyreadstat.read_sas7bdat,
              "xpt": pyreadstat.read_xport}[kind]
    try:
        meta = reader(io.BytesIO(raw), metadataonly=True)[1]
        _too_many(meta.number_rows or 0, meta.number_columns or 0, MAX_CELLS, f"{STAT_FORMATS[kind]} file")
        df, meta = reader(io.BytesIO(raw))
    except ValueError:
        raise
    except Exception as exc:
        raise ValueError(f"the {STAT_FORMATS[kind]} file could not be read ({type(exc).__name__}); save it again from "
                         f"{STAT_FORMATS[kind]}, or as CSV.") from None
    if kind == "xpt":
        _check_xpt_complete(raw, len(df), meta)
    labels = {str(c): str(v) for c, v in (meta.column_names_to_labels or {}).items() if v}
    value_labels = {str(c): {k: str(v) for k, v in d.items()}
                    for c, d in (getattr(meta, "variable_value_labels", None) or {}).items() if d}
    back = "as SAS transport (.xpt)" if kind == "sas7bdat" else "in this format"
    notes = [f"{STAT_FORMATS[kind]} file: {len(labels)} variable label(s) and value labels on {len(value_labels)} "
             f"column(s) read; the release can be written back {back} with its labels"]
    return df, labels, value_labels, notes


_XPT_OBS = re.compile(rb"HEADER RECORD\*{7}OBS(V8   |     )HEADER RECORD!{7}")


def _check_xpt_complete(raw, n_read, meta):
    """A SAS transport file cut short is read by pyreadstat as fewer records without a word
    (748 of 834).  Version 8 files state the record count in the OBS header: compare it.
    Version 5 files do not: their data are whole records padded with blanks to a multiple
    of 80 bytes, so a file whose length is not a multiple of 80, or that ends in a partial
    record, was cut (a cut that falls exactly on a record and an 80-byte boundary cannot be
    told from a whole file)."""
    m = _XPT_OBS.search(raw)
    if m is None or m.start() % 80:
        return
    line = raw[m.start():m.start() + 80]
    stated = re.search(rb"!{7}\s*(\d+)", line) if m.group(1) == b"V8   " else None
    if stated is not None and int(stated.group(1)) != n_read:
        raise ValueError(f"the SAS transport file is incomplete: its header states {int(stated.group(1)):,} records but "
                         f"{n_read:,} could be read; copy or export it again.")
    width = sum(int(w or 0) for w in (getattr(meta, "variable_storage_width", None) or {}).values())
    data_len = len(raw) - (m.start() + 80)
    if width <= 0 or data_len < 0:
        return
    rest = data_len - (data_len // width) * width
    if len(raw) % 80 or rest >= 80 or raw[len(raw) - rest:].strip(b" \x00"):
        raise ValueError(f"the SAS transport file is incomplete: it ends inside a record ({len(raw):,} bytes; "
                         f"{n_read:,} whole records could be read); copy or export it again.")


def read_table(source, filename: str = "data.csv", *, sep: str | None = None, decimal: str | None = None) -> ReadResult:
    """Read a CSV/TSV, Excel (.xlsx), Parquet, SPSS (.sav), Stata (.dta) or SAS
    (.sas7bdat, .xpt) file into a DataFrame, as the dashboard does.

    SPSS, Stata and SAS: variable labels and value labels are kept in the result (the
    values stay numeric codes).

    CSV: encoding UTF-8 (BOM accepted; otherwise Windows-1252 with a note), separator
    detected among , ; tab | unless given, decimal mark detected (',' when numbers such as
    1.234,5 appear) unless given; numbers stored as text with thousands separators or quotes
    are converted.

    Parameters
    ----------
    source : bytes, str or path
        The file's bytes, or a path.
    filename : str
        Its name: the extension chooses the reader.
    sep, decimal : str, optional
        Force the separator or decimal mark instead of detecting them.

    Returns
    -------
    ReadResult

    Raises
    ------
    ValueError
        With a plain message on unreadable input.

    Examples
    --------
    >>> import sdccore
    >>> r = sdccore.read_table(b"a;b\\n1,5;2\\n3,25;4\\n", "x.csv")
    >>> r.sep, r.decimal, r.data["a"].tolist()
    (';', ',', [1.5, 3.25])
    """
    raw, filename = _source_bytes(source, filename)
    name = filename.lower()
    notes = []
    kind = _kind(raw, name)
    if kind == "xlsx" and not name.endswith((".xlsx", ".xlsm")):
        notes.append("the file is an Excel workbook (its name says otherwise); it was read as Excel")
    if kind == "parquet" and not name.endswith((".parquet", ".pq")):
        notes.append("the file is a Parquet file (its name says otherwise); it was read as Parquet")
    if kind == "xls":
        raise ValueError("the file is an old Excel .xls workbook; save it as .xlsx or CSV and upload that.")
    labels, value_labels = {}, {}
    enc = sep_used = dec_used = None
    if kind in STAT_FORMATS:
        df, labels, value_labels, st_notes = _read_stat(raw, kind)
        notes.extend(st_notes)
    elif kind == "xlsx":
        df, xl_notes = _read_excel(raw)
        notes.extend(xl_notes)
    elif kind == "parquet":
        df = _read_parquet(raw)
    else:
        df, enc, sep_used, dec_used = _read_csv_text(raw, kind, sep, decimal, notes)
    notes.extend(_convert_text_numbers(df, dec_used or "."))
    df = _tidy_columns(df, notes)
    fmt = kind if kind in STAT_FORMATS or kind in ("xlsx", "parquet") else "csv"
    labels = {c: v for c, v in labels.items() if c in df.columns}
    value_labels = {c: v for c, v in value_labels.items() if c in df.columns}
    return ReadResult(df, sep_used, dec_used, enc, tuple(notes), fmt, labels, value_labels)


def _source_bytes(source, filename):
    """The file's bytes (from a path, a stream or bytes) and its name; refused when empty or
    over the size limit."""
    if isinstance(source, (str, os.PathLike)):
        raw = read_bounded(source)
        filename = str(source)
    elif hasattr(source, "read"):
        raw = _read_stream(source)
    else:
        raw = bytes(source)
    if len(raw) == 0:
        raise ValueError("the file is empty; choose a file with a header row and records.")
    if len(raw) > MAX_BYTES:
        raise ValueError(f"the file is {len(raw) / 2**20:.0f} MB; the limit is {MAX_BYTES // 2**20} MB. "
                         f"Select the records or variables you need before uploading.")
    return raw, filename


def _check_lines(raw):
    long = long_line(raw, MAX_LINE_BYTES)
    if long is not None:
        raise ValueError(f"line {long[0]:,} of the file is {size_text(long[1])} long; a line is at most "
                         f"{size_text(MAX_LINE_BYTES)} here (sdccore._io.read.MAX_LINE_BYTES). Check that it is a CSV file "
                         f"with one record a line.")


def _check_width(header, sep):
    width = header_fields(header, sep, MAX_COLUMNS)
    if width > MAX_COLUMNS:
        raise ValueError(f"the file has {width} columns; at most {MAX_COLUMNS} can be handled (counted in its header "
                         f"line, separator {sep!r}). Select the variables to protect before uploading.")


def _read_csv_text(raw, kind, sep, decimal, notes):
    """A CSV file: (frame, encoding, separator, decimal mark); what was guessed or skipped is
    added to ``notes``."""
    if kind == "binary":
        raise ValueError("this looks like a binary file, not CSV text; upload CSV, Excel (.xlsx), Parquet, SPSS "
                         "(.sav), Stata (.dta) or SAS (.sas7bdat, .xpt).")
    _check_lines(raw)  # before decoding: a 150 MB line is refused in a second
    text, enc, enc_notes = _decode(raw)
    notes.extend(enc_notes)
    if not text.strip():
        raise ValueError("the file is empty; choose a file with a header row and records.")
    head = _head_lines(text)
    comments = 0
    while comments < len(head) and (head[comments].lstrip().startswith("#") or not head[comments].strip()):
        comments += 1
    if comments:
        if comments == len(head):
            raise ValueError("the file holds only comment lines (starting with #); choose a file with a header row and records.")
        notes.append(f"{comments} comment or blank line(s) before the header were skipped")
        head = head[comments:]
    sep_used = sep or _sniff_sep(head)
    _check_width(head[0], sep_used)  # before pandas: 200,000 columns took 150 s
    dec_used = decimal or _guess_decimal(head, sep_used)
    try:
        # from UTF-8 bytes: a StringIO holds 4 bytes a character (a 144 MB file took 1.2 GB)
        df = pd.read_csv(io.BytesIO(text.encode("utf-8", errors="surrogatepass")), encoding="utf-8",
                         sep=sep_used, decimal=dec_used, skipinitialspace=True, thousands=None, low_memory=False,
                         skiprows=comments, skip_blank_lines=False)
    except pd.errors.EmptyDataError:
        raise ValueError("the file has no columns; check that it is a CSV with a header row.") from None
    except (pd.errors.ParserError, csv.Error) as exc:
        if "out of memory" in str(exc).lower() or "memory" in str(exc).lower() and "alloc" in str(exc).lower():
            raise MemoryError("out of memory while reading the file") from None
        line = re.search(r"line (\d+)", str(exc))
        where = f" near line {line.group(1)}" if line else ""
        raise ValueError(f"the file could not be read as CSV{where}: rows have different numbers of fields. "
                         f"Check the separator (detected {sep_used!r}) and quoting.") from None
    if text.count("\n") > len(df) + comments + 1:  # line breaks inside quoted values: check their length
        check_values(df, MAX_VALUE_CHARS)
    try:
        header = next(csv.reader(io.StringIO(head[0]), delimiter=sep_used), [])
    except csv.Error:  # a name longer than csv's field limit
        header = [str(c) for c in df.columns]
    names = [h.strip() for h in header]
    dup = sorted({h for h in names if h and names.count(h) > 1})
    if dup:
        raise ValueError(f"duplicated column names: {', '.join(dup)}; rename the columns so that every name is unique.")
    return df, enc, sep_used, dec_used


def _tidy_columns(df, notes):
    """Empty unnamed columns dropped, names stripped and made single-line; the size limits."""
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
    odd = [c for c in df.columns if any(ch in c for ch in "\r\n\t")]
    if odd:
        df.columns = [" ".join(c.split()) if c in odd else c for c in df.columns]
        if df.columns.duplicated().any():
            raise ValueError("column names differ only in line breaks or tabs; rename the columns so that every name is unique.")
        notes.append(f"line breaks or tabs in {len(odd)} column name(s) were replaced by spaces")
    if df.shape[1] > MAX_COLUMNS:
        raise ValueError(f"the file has {df.shape[1]} columns; at most {MAX_COLUMNS} can be handled. "
                         f"Select the variables to protect before uploading.")
    if df.shape[0] == 0:
        raise ValueError("the file has a header but no records.")
    _too_many(df.shape[0], df.shape[1], MAX_CELLS, "file")
    return df
