"""Bounds checked on an input file before a parser sees it (hostile files: a 905 KB .xlsx
that unpacks to 6 million rows, a CSV of 200,000 columns or of one 150 MB line):

* ``xlsx_counts``: the rows, cells and shared texts each XML part of an .xlsx holds,
  counted from its zip by streaming (never parsed), stopped as soon as one is over the limit;
* ``long_line``: the first line of a CSV text longer than a limit (linear, nothing copied);
* ``header_fields``: the fields of a CSV header line (quotes respected);
* ``budget``: the first lines of a text within a number of characters (what the separator
  and decimal-mark guesses look at);
* ``unplain_columns``: Parquet columns that are no table's values (lists, structs, maps).

Imports nothing from sdccore: the limits are passed in (they live in ``_io``, where
messages name them).
"""

from __future__ import annotations

import csv
import re

__all__ = []

_TAGS = {b"row": "rows", b"c": "cells", b"si": "distinct texts"}
_HEADER_ROW = 16_384  # Excel's most columns: the header row's cells are not records x columns
_ENDS = (b" ", b">", b"/", b"\t", b"\n", b"\r")  # what may follow a tag's name
_ROOT = re.compile(rb"<([A-Za-z_][\w.-]*:)?(?:worksheet|sst|chartsheet|dialogsheet)[\s>/]")


def check_xlsx_zip(raw, max_unpacked, max_cells, max_part_bytes):
    """An .xlsx's size from its zip before openpyxl opens it (which scans a whole sheet
    without a <dimension> element: 77 s for 6 million rows): the unpacked total, each XML
    part's size, and the rows, cells and shared texts each holds (``xlsx_counts``)."""
    import io
    import zipfile
    import zlib

    try:
        zf = zipfile.ZipFile(io.BytesIO(raw))
        unpacked = sum(i.file_size for i in zf.infolist())
        if unpacked > max_unpacked:
            raise ValueError(f"the Excel file unpacks to {unpacked / 2**30:.1f} GB; at most {max_unpacked / 2**30:.0f} GB "
                             f"can be read here (sdccore._io.read.MAX_UNPACKED). Save the sheet you need as CSV.")
        xlsx_counts(zf, max_cells, max_part_bytes)
    except (zipfile.BadZipFile, zlib.error, EOFError, RuntimeError, NotImplementedError):
        raise ValueError("the Excel file could not be read (it is damaged); save it again as .xlsx or CSV.") from None


def check_values(df, limit):
    """Refuse a text cell longer than ``limit`` characters (a quoted value spanning lines,
    which the line bound cannot see), naming its column and record."""
    for c in df.columns:
        if df[c].dtype == object:
            lengths = df[c].map(lambda v: len(v) if isinstance(v, str) else 0)
            if len(lengths) and lengths.max() > limit:
                raise ValueError(f"column {str(c)!r} holds a value of {int(lengths.max()):,} characters (record "
                                 f"{int(lengths.to_numpy().argmax()) + 1:,}); a value is at most {limit:,} here "
                                 f"(sdccore._io.read.MAX_VALUE_CHARS). Check the file's quotes.")


def xlsx_counts(zf, max_count, max_part_bytes):
    """Refuse an .xlsx (an open ``zipfile.ZipFile``) whose XML parts are larger than
    ``max_part_bytes`` unpacked (the zip directory's sizes: zipfile never unpacks more than
    them) or hold more than ``max_count`` rows, cells or shared texts (counted from the
    unpacked bytes, stopped at the first one over).  ValueError naming the part."""
    for info in zf.infolist():
        name = info.filename
        if not name.lower().endswith(".xml"):
            continue
        if info.file_size > max_part_bytes:
            raise ValueError(f"the Excel file's part {name} unpacks to {size_text(info.file_size)}; at most "
                             f"{size_text(max_part_bytes)} a sheet can be read here (sdccore._io.read.MAX_SHEET_BYTES). "
                             f"Select the records or variables you need, or save the sheet as CSV.")
        if info.file_size < 4 * (max_count + 1):  # '<c/>' is 4 bytes: too small to hold more
            continue
        tag = _over(zf, info, max_count + _HEADER_ROW)
        if tag is not None:
            raise ValueError(f"the Excel file's part {name} holds more than {max_count:,} {_TAGS[tag]} (counted before "
                             f"reading); at most {max_count:,} cells can be read here (sdccore._io.read.MAX_EXCEL_CELLS). "
                             f"Select the records or variables you need, or save the sheet as CSV and use the command "
                             f"line (python -m sdccore).")


def _over(zf, info, limit):
    """The first tag (row, c, si) counted more than ``limit`` times in a part, or None."""
    counts = dict.fromkeys(_TAGS, 0)
    carry, prefix = b"", None
    with zf.open(info) as fh:
        while True:
            chunk = fh.read(1 << 20)
            data = carry + chunk
            cut = data.rfind(b"<") if chunk else len(data)
            if cut <= 0:
                cut = len(data)  # a tag starts nowhere but at 0: it is whole (1 MB follows it)
            if prefix is None:
                m = _ROOT.search(data, 0, 1 << 16)
                prefix = (m.group(1) or b"") if m else b""
            part, carry = data[:cut], data[cut:]
            for tag in _TAGS:
                counts[tag] += sum(part.count(b"<" + prefix + tag + end) for end in _ENDS)
                if counts[tag] > limit:
                    return tag
            if not chunk:
                return None


def long_line(text, limit):
    """(line number, length) of the first line of ``text`` (str or bytes) longer than
    ``limit``, or None.  Only windows of limit/2 aligned on multiples of it are searched for
    a line break (a line of ``limit`` or more always covers one whole window): linear, and
    about one search a window."""
    nl, cr = ("\n", "\r") if isinstance(text, str) else (b"\n", b"\r")
    half, n = max(1, limit // 2), len(text)
    for start in range(0, n - half + 1, half):
        end = start + half
        if text.find(nl, start, end) >= 0 or text.find(cr, start, end) >= 0:
            continue
        a = max(text.rfind(nl, 0, start), text.rfind(cr, 0, start)) + 1
        after = [i for i in (text.find(nl, end), text.find(cr, end)) if i >= 0]
        b = min(after) if after else n
        if b - a > limit:
            return text.count(nl, 0, a) + 1, b - a
    return None


def header_fields(line, sep, limit):
    """The number of fields of a header line (exactly, quotes respected, when a quick count
    of the separator says it may be over ``limit``)."""
    quick = line.count(sep) + 1
    if quick <= limit:
        return quick
    try:
        return len(next(csv.reader([line], delimiter=sep), []))
    except csv.Error:  # a field over csv's own size limit: the quick count stands
        return quick


def budget(lines, chars):
    """The first lines whose lengths add up to at most ``chars`` (the first line, cut to
    ``chars``, when it alone is longer)."""
    out, total = [], 0
    for line in lines:
        if total + len(line) > chars:
            if not out:
                out.append(line[:chars])
            break
        out.append(line)
        total += len(line) + 1
    return out


def unplain_columns(schema):
    """(name, type) of the columns of an Arrow schema that hold lists, structs, maps or
    unions: no microdata value, and nothing the reader can make one."""
    import pyarrow as pa

    out = []
    for f in schema:
        t = f.type.value_type if pa.types.is_dictionary(f.type) else f.type
        if pa.types.is_nested(t) or pa.types.is_union(t):
            out.append((f.name, str(t)))
    return out


def binary_as_text(table):
    """Binary Parquet columns (older writers store text so, without marking it UTF-8) read as
    text; ValueError naming those that are not UTF-8 text (images, pickles, ...)."""
    import pyarrow as pa

    bad = []
    for i, f in enumerate(table.schema):
        dictionary = pa.types.is_dictionary(f.type)
        t = f.type.value_type if dictionary else f.type
        if not (pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)):
            continue
        to = pa.dictionary(f.type.index_type, pa.string()) if dictionary else pa.string()
        try:
            table = table.set_column(i, f.name, table.column(i).cast(to))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            bad.append((f.name, str(t)))
    if bad:
        raise ValueError(f"the Parquet file has column(s) {describe(bad)} holding binary data that is not UTF-8 text; "
                         f"drop them, or convert them to text or numbers, before reading.")
    return table


def size_text(n):
    """'143.1 MB', or '900 bytes' below a tenth of a MB."""
    return f"{n / 2**20:,.1f} MB" if n >= 2**20 / 10 else f"{n:,} bytes"


def describe(cols, k=5):
    """'a (list<item: int64>), b (binary)' for at most k columns, and how many more."""
    text = ", ".join(f"{n} ({t if len(t) <= 60 else t[:57] + '...'})" for n, t in cols[:k])
    return text + (f" and {len(cols) - k} more" if len(cols) > k else "")
