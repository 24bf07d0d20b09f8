"""Writing a release in the formats offices use: CSV, Parquet, Excel, SPSS (.sav), Stata
(.dta) and SAS transport (.xpt), with the original's variable and value labels, nothing
written to disk on the way (reading them is ``_io.read_table``)."""

from __future__ import annotations

import io
import os
import re

import numpy as np
import pandas as pd

from .read import STAT_FORMATS
from .write import release_csv

WRITE_FORMATS = ("csv", "parquet", "xlsx", "sav", "dta", "xpt")
_STATA_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,31}$")


def _write_stat(data, fmt, labels, value_labels):
    """SPSS, Stata or SAS transport bytes through pyreadstat, written to an anonymous
    in-memory file (``os.memfd_create``): the release never touches the disk."""
    import pyreadstat

    if fmt in ("dta", "xpt"):
        bad = [str(c) for c in data.columns if not _STATA_NAME.match(str(c))]
        if bad:
            what = "Stata" if fmt == "dta" else "SAS"
            raise ValueError(f"column name(s) {', '.join(bad[:8])} are not valid {what} names (letters, digits and "
                             f"underscores, at most 32, not starting with a digit); rename them, or write the release "
                             f"as CSV, Parquet, Excel or SPSS.")
    writer = {"sav": pyreadstat.write_sav, "dta": pyreadstat.write_dta, "xpt": pyreadstat.write_xport}[fmt]
    kwargs = {"column_labels": {c: labels[c] for c in data.columns if c in labels} or None}
    if fmt in ("sav", "dta"):
        vl = {c: {float(k) if fmt == "sav" else int(k): v for k, v in d.items()}
              for c, d in (value_labels or {}).items() if c in data.columns}
        if vl:
            kwargs["variable_value_labels"] = vl
    if fmt == "xpt":
        kwargs["file_format_version"] = 8
    fd = os.memfd_create("release", 0)
    try:
        path = f"/proc/self/fd/{fd}"
        try:
            writer(data, path, **{k: v for k, v in kwargs.items() if v is not None})
        except Exception as exc:
            raise ValueError(f"the release could not be written as {STAT_FORMATS[fmt]} ({type(exc).__name__}: "
                             f"{str(exc)[:200]}); write it as CSV or Parquet instead.") from None
        with open(path, "rb") as fh:
            return fh.read()
    finally:
        os.close(fd)


FIXED_TIME = (2000, 1, 1, 0, 0, 0)  # the time stamped into a workbook: two rebuilds give the same bytes


def _fixed_zip_times(raw: bytes) -> bytes:
    """An .xlsx (a zip) rewritten with every entry's time and the workbook's created/modified
    properties set to FIXED_TIME, so that rebuilding the same release gives the same bytes."""
    import zipfile

    src = zipfile.ZipFile(io.BytesIO(raw))
    out = io.BytesIO()
    stamp = "%04d-%02d-%02dT%02d:%02d:%02dZ" % FIXED_TIME
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            body = src.read(info.filename)
            if info.filename == "docProps/core.xml":
                body = re.sub(rb"(<dcterms:(?:created|modified)[^>]*>)[^<]*", lambda m: m.group(1) + stamp.encode(),
                              body)
            zi = zipfile.ZipInfo(info.filename, date_time=FIXED_TIME)
            zi.compress_type = zipfile.ZIP_DEFLATED
            zi.external_attr = info.external_attr
            dst.writestr(zi, body)
    return out.getvalue()


def whole_numbers(data: pd.DataFrame) -> pd.DataFrame:
    """``data`` with each float column that holds whole numbers and missing cells as a nullable
    integer column (pandas reads an integer column with blanks as float: written back as is,
    59 would become 59.0, in protected and unchanged columns alike)."""
    out = data
    for c in data.columns:
        col = data[c]
        if not pd.api.types.is_float_dtype(col.dtype) or not col.isna().any():
            continue
        v = col.dropna().to_numpy()
        if len(v) and np.isfinite(v).all() and (np.abs(v) < 2.0 ** 53).all() and (v == np.round(v)).all():
            if out is data:
                out = data.copy()
            out[c] = col.astype("Int64")
    return out


def write_table(data: pd.DataFrame, format: str = "csv", *, labels=None, value_labels=None, sep: str = ",",
                decimal: str = ".") -> bytes:
    """The bytes of a file holding ``data`` in ``format``, nothing written to disk.

    Parameters
    ----------
    data : DataFrame
        The release (``make_release(...).data``).
    format : {'csv', 'parquet', 'xlsx', 'sav', 'dta', 'xpt'}
        CSV (``sep``, ``decimal``), Parquet, Excel, SPSS, Stata, or SAS transport (SAS
        files are read as .sas7bdat or .xpt and written as .xpt, the format SAS publishes;
        nothing writes .sas7bdat).
    labels : dict, optional
        Column -> variable label, written into SPSS, Stata and SAS files.
    value_labels : dict, optional
        Column -> {code: label}, written into SPSS and Stata files.
    sep, decimal : str
        For CSV.

    Returns
    -------
    bytes

    Examples
    --------
    >>> import pandas as pd, sdccore
    >>> raw = sdccore.write_table(pd.DataFrame({"income": [1.5, 2.0]}), "sav", labels={"income": "Income (EUR)"})
    >>> sdccore.read_table(raw, "x.sav").labels
    {'income': 'Income (EUR)'}
    """
    if format not in WRITE_FORMATS:
        raise ValueError(f"format={format!r} is not supported; use one of {', '.join(WRITE_FORMATS)}.")
    labels = dict(labels or {})
    if format in ("csv", "parquet", "xlsx"):
        data = whole_numbers(data)
    if format == "csv":
        return release_csv(data, sep=sep, decimal=decimal)
    if format == "parquet":
        buf = io.BytesIO()
        data.to_parquet(buf, index=False)
        return buf.getvalue()
    if format == "xlsx":
        buf = io.BytesIO()
        data.to_excel(buf, index=False, engine="openpyxl")
        return _fixed_zip_times(buf.getvalue())
    return _write_stat(data, format, labels, value_labels)


def release_format(read_format: str) -> str:
    """The format a release is written in by default: the original's.

    Parameters
    ----------
    read_format : str
        The format the original was read in (``ReadResult.format``).

    Returns
    -------
    str
        One of the formats ``write_table`` writes: the original's, SAS data sets as SAS
        transport (.xpt), anything else as CSV.

    Examples
    --------
    >>> import sdccore
    >>> sdccore.release_format("sas7bdat"), sdccore.release_format("dta")
    ('xpt', 'dta')
    """
    return {"sas7bdat": "xpt"}.get(read_format, read_format if read_format in WRITE_FORMATS else "csv")
