"""Writes the round-two hostile files (issue 15) into this folder and their expectations
into expected.json.  Run once: python tests/data/bad/make_round_two.py (the files are
committed; the script documents how each was made)."""

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
rng = np.random.default_rng(2026)
N = 60


def base(n=N, m=3):
    A = rng.standard_normal((n, m)) @ np.array([[1, .6, .3], [0, 1, .4], [0, 0, 1]])[:m, :m]
    return pd.DataFrame(np.round(1000 + 200 * A, 2), columns=["alpha", "beta", "gamma"][:m])


CASES = {}


def text(name, body, library, dashboard, note, encoding="utf-8"):
    (HERE / name).write_bytes(body.encode(encoding) if isinstance(body, str) else body)
    CASES[name] = {"library": library, "dashboard": dashboard, "note": note}


def with_column(fmt, sep=",", quote=True):
    d = base()
    lines = [sep.join(d.columns)]
    for _, r in d.iterrows():
        cell = fmt(r.alpha)
        lines.append(sep.join([f'"{cell}"' if quote else cell, f"{r.beta}", f"{r.gamma}"]))
    return "\n".join(lines) + "\n"


# 1. numbers stored as text
text("34_currency.csv", with_column(lambda v: f"${v:,.2f}"), "ok", "ok", "currency signs read as numbers, with a note")
text("35_percent.csv", with_column(lambda v: f"{v / 100:.2f}%"), "ok", "ok", "percent signs read, values kept in percent")
text("36_accounting_negatives.csv", with_column(lambda v: f"({v:,.2f})" if v < 1000 else f"{v:,.2f}"), "ok", "ok",
     "(1,234.00) read as -1234")
fr = base()
lines = [";".join(fr.columns)]
for _, r in fr.iterrows():
    a = f"{r.alpha * 10:,.2f}".replace(",", "\u202f").replace(".", ",")
    b = f"{r.beta * 10:,.2f}".replace(",", "\u00a0").replace(".", ",")
    lines.append(";".join([a, b, f"{r.gamma}".replace(".", ",")]))
text("37_narrow_and_nbsp_thousands.csv", "\n".join(lines) + "\n", "ok", "ok",
     "French thousands separators U+202F and U+00A0 with decimal commas")
try:
    import decimal

    import pyarrow as pa
    import pyarrow.parquet as pq

    d = base()
    tbl = pa.table({"alpha": pa.array([decimal.Decimal(f"{v:.2f}") for v in d.alpha], pa.decimal128(12, 2)),
                    "beta": d.beta, "gamma": d.gamma})
    buf = io.BytesIO()
    pq.write_table(tbl, buf)
    text("38_parquet_decimal128.parquet", buf.getvalue(), "ok", "ok", "decimal128 column converted with a note")
except ImportError:  # pragma: no cover
    pass

# 2. missing-value marks in a numeric column
for name, mark in (("39_dash_missing.csv", "-"), ("40_dot_missing.csv", "."), ("41_na_marks.csv", "n/a")):
    d = base()
    body = d.to_csv(index=False).splitlines()
    for i in (3, 17):
        parts = body[i].split(",")
        parts[0] = mark
        body[i] = ",".join(parts)
    text(name, "\n".join(body) + "\n", "ok", "missing cell(s) in 2 record(s)",
         f"'{mark}' read as missing; kept missing in the release, in place (issue 14, part 1)")

# 9. a quoted decimal comma in a comma-separated file
d = base()
lines = [",".join(d.columns)] + [f'"{str(r.alpha).replace(".", ",")}",{r.beta},{r.gamma}' for _, r in d.iterrows()]
text("42_quoted_decimal_comma.csv", "\n".join(lines) + "\n", "hold numbers stored as text", "could be read two ways",
     "'920,6' is never read as 9206: left as text with a note, refused unless excluded")

# 4. float resolution
d = base()
d["alpha"] = 2.0 ** 63 + np.round(rng.standard_normal(N)) * 2048
text("43_near_2_pow_63.csv", d.to_csv(index=False), "vary only in their last digits", "vary only in their last digits",
     "values near 2**63 differ in the last digits only")
d = base()
d["beta"] = np.where(rng.random(N) < 0.5, 1.0, np.nextafter(1.0, 2.0))
text("44_one_ulp_apart.csv", d.to_csv(index=False, float_format="%.17g"), "vary only in their last digits",
     "vary only in their last digits", "a column of 1 and 1 + one ulp")

# 14. extreme magnitudes
d = base()
d["alpha"] = d["alpha"] * 1e197
text("45_values_1e200.csv", d.to_csv(index=False), "1e150 or more", "values of 1e150 or more",
     "sums finite, squares overflow: refused with a rescale fix, never NaN columns")
d = base()
d["gamma"] = d["gamma"] * 1e-203
text("46_values_1e-200.csv", d.to_csv(index=False), "1e-150 or less", "only values of 1e-150 or less",
     "squares underflow: refused, not called constant")

# 13. encodings and disguised formats
d = base()
text("47_utf16.csv", d.to_csv(index=False), "ok", "ok", "UTF-16 with BOM read as such", encoding="utf-16")
xbuf = io.BytesIO()
base().to_excel(xbuf, index=False)
text("48_xlsx_named_csv.csv", xbuf.getvalue(), "ok", "ok", "an Excel workbook named .csv is read as Excel, with a note")
xbuf = io.BytesIO()
with pd.ExcelWriter(xbuf, engine="openpyxl") as w:
    pd.DataFrame().to_excel(w, sheet_name="Notes", index=False)
    base().to_excel(w, sheet_name="Data", index=False)
text("49_data_on_second_sheet.xlsx", xbuf.getvalue(), "ok", "ok", "first sheet empty: the sheet with data is read, named")
xbuf = io.BytesIO()
with pd.ExcelWriter(xbuf, engine="openpyxl") as w:
    base().to_excel(w, sheet_name="2024", index=False)
    base().to_excel(w, sheet_name="2025", index=False)
text("50_two_sheets.xlsx", xbuf.getvalue(), "ok", "ok", "the other sheet with data is named in a note")
text("51_comment_lines.csv", "# exported 2026-11-01\n# units: EUR\n" + base().to_csv(index=False), "ok", "ok",
     "leading # lines skipped with a note")
from openpyxl import Workbook  # noqa: E402

wb = Workbook()
ws = wb.active
ws.append(["income", "income", "age"])
for r in base().itertuples(index=False):
    ws.append(list(r))
xbuf = io.BytesIO()
wb.save(xbuf)
text("52_excel_duplicated_names.xlsx", xbuf.getvalue(), "duplicated column names: income",
     "duplicated column names: income", "Excel no longer renames income.1 silently")
text("53_newline_in_name.csv", '"al\npha",beta,gamma\n' + "\n".join(base().to_csv(index=False).splitlines()[1:]) + "\n",
     "ok", "ok", "a line break in a column name is replaced by a space, with a note")

# 15. formula cells and a formula header, in a file the CLI releases
d = base()
d.insert(0, "=HYPERLINK(\"x\")", ["=1+1"] * N)
text("54_formula_cells.csv", d.to_csv(index=False), "ok", "ok", "formula cells and header neutralised by the CLI too")

# 8. an empty and a mostly empty column
d = base()
d["empty"] = np.nan
text("55_all_empty_column.csv", d.to_csv(index=False), "empty column(s) empty", "ok",
     "the fix is to exclude the column, never to drop every record")

# 1/2. a mostly numeric text column
d = base().astype({"alpha": object})
d.loc[[5, 9], "alpha"] = "n.v."
text("56_mostly_numeric_text.csv", d.to_csv(index=False), "hold numbers stored as text", "mostly numbers but has 2",
     "a stray code in a numeric column is never passed through silently")

# 17. small data
text("57_three_records.csv", base(3, m=2).to_csv(index=False), "ok", "ok", "FA protects 3 records; M-AGG says it needs 4")
text("58_two_variables.csv", base(m=2).to_csv(index=False), "ok", "ok", "two variables: Explore and Run work")

# 10. sizes from metadata
try:
    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(pa.table({"a": pa.array(np.zeros(21_000_000, dtype=np.int8))}), buf, compression="zstd")
    text("59_parquet_bomb.parquet", buf.getvalue(), "21,000,000 records", "21,000,000 records",
         "a small Parquet file of 21 million rows is refused from its metadata, before reading")
except ImportError:  # pragma: no cover
    pass
xbuf = io.BytesIO()
base().to_excel(xbuf, index=False)
src = zipfile.ZipFile(io.BytesIO(xbuf.getvalue()))
out = io.BytesIO()
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
    for item in src.infolist():
        data = src.read(item.filename)
        if item.filename == "xl/worksheets/sheet1.xml":
            import re

            data = re.sub(rb'<dimension ref="[^"]*" ?/>', b'<dimension ref="A1:Z300000"/>', data)
        z.writestr(item, data)
text("60_xlsx_claims_300k_rows.xlsx", out.getvalue(), "ok", "ok",
     "the sheet's dimension says 300,000 x 26 but it holds 60 x 3: its cells are counted before reading, the "
     "dimension is not believed (writers leave it stale), so it is read")

exp = json.loads((HERE / "expected.json").read_text())
exp.update(CASES)
(HERE / "expected.json").write_text(json.dumps(exp, indent=1, ensure_ascii=False) + "\n")
print(f"{len(CASES)} files written; corpus now {len(exp)} files")
