"""Writes the hostile input corpus of tests/data/bad/ and its expected messages.

    python tests/data/make_bad_corpus.py

Each case: a file and what the user must be told, on the library/CLI path (read_table, then
protect) and on the dashboard's upload path (handle_upload, then the Data page's checks).
``expect`` is a fragment of the message; "ok" means the file is read and protected.  The two
large cases (10,000 columns, 300 MB) are made in memory by the tests, not stored.
"""

import json
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent / "bad"


def table(rng, n=40, m=4, scale=100.0):
    A = rng.standard_normal((m, m))
    return rng.standard_normal((n, m)) @ A * scale + 1000


def csv(X, names, sep=",", fmt="{:.6f}"):
    lines = [sep.join(names)]
    for row in X:
        lines.append(sep.join(fmt.format(v) for v in row))
    return ("\n".join(lines) + "\n").encode()


def main():
    HERE.mkdir(exist_ok=True)
    rng = np.random.default_rng(2026)
    X = table(rng)
    names = ["alpha", "beta", "gamma", "delta"]
    cases = {}

    def add(name, content, library, dashboard=None, note=""):
        (HERE / name).write_bytes(content)
        cases[name] = {"library": library, "dashboard": dashboard or library, "note": note}

    add("01_empty.csv", b"", "the file is empty")
    add("02_header_only.csv", b"alpha,beta,gamma\n", "header but no records")
    add("03_one_row.csv", csv(X[:1], names), "1 record; at least 3", "1 record(s). Fix: at least 10")
    add("04_two_rows.csv", csv(X[:2], names), "2 records; at least 3", "2 record(s). Fix: at least 10")
    add("05_one_numeric_column.csv", b"name,x\n" + b"".join(f"firm{i},{v:.3f}\n".encode() for i, v in enumerate(X[:, 0])),
        "1 numeric column", "1 numeric column(s) to protect")
    latin = "café,größe,naïve\n" + "".join(f"{a:.2f},{b:.2f},{c:.2f}\n" for a, b, c in X[:, :3])
    add("06_latin1.csv", latin.encode("cp1252"), "ok", "not UTF-8", "Windows-1252 with a note")
    add("07_utf8_bom.csv", b"\xef\xbb\xbf" + csv(X, names), "ok", note="BOM removed from the first name")
    semi = "alpha;beta;gamma\n" + "".join(f"{a:.2f};{b:.2f};{c:.2f}\n".replace(".", ",") for a, b, c in X[:, :3])
    add("08_semicolon_decimal_comma.csv", semi.encode(), "ok")
    thou = "alpha,beta\n" + "".join(f'"{a * 1000:,.0f}","{b * 1000:,.0f}"\n' for a, b in X[:, :2])
    add("09_thousands_separators.csv", thou.encode(), "ok", note="text numbers converted")
    quoted = "alpha,beta,gamma\n" + "".join(f'"{a:.3f}","{b:.3f}","{c:.3f}"\n' for a, b, c in X[:, :3])
    add("10_quoted_numbers.csv", quoted.encode(), "ok")
    mixed = "alpha,beta,gamma\n" + "".join(
        f"{'approx. 12' if i == 5 else f'{a:.2f}'},{b:.2f},{c:.2f}\n" for i, (a, b, c) in enumerate(X[:, :3]))
    add("11_mixed_types.csv", mixed.encode(), "ok", "mostly numbers but has 1 non-numeric", "alpha is treated as text")
    nan = csv(X, names).decode().splitlines()
    nan[3] = nan[3].split(",", 1)[0] + ",,," + nan[3].split(",")[-1]
    add("12_empty_cells.csv", ("\n".join(nan) + "\n").encode(), "ok", "missing cell(s) in 1 record(s)",
        "missing cells are kept missing in the release (issue 14, part 1)")
    lines = csv(X, names).decode().splitlines()
    lines[4] = "inf," + lines[4].split(",", 1)[1]
    add("13_inf.csv", ("\n".join(lines) + "\n").encode(), "infinite values", "have infinite values")
    lines = csv(X, names).decode().splitlines()
    lines[4] = "-inf," + lines[4].split(",", 1)[1]
    add("14_minus_inf.csv", ("\n".join(lines) + "\n").encode(), "infinite values", "have infinite values")
    big = X.copy()
    big[:, 0] = 1e308 * np.sign(big[:, 0] - 1000)
    add("15_values_1e308.csv", csv(big, names, fmt="{:.6g}"), "so large that their sums overflow")
    const = X.copy()
    const[:, 2] = 7.0
    add("16_constant_column.csv", csv(const, names), "constant column(s) gamma", "constant column(s): gamma")
    same = np.tile(X[:1], (40, 1))
    add("17_identical_rows.csv", csv(same, names), "constant column(s)")
    add("18_duplicated_names.csv", csv(X, ["alpha", "beta", "alpha", "delta"]), "duplicated column names: alpha")
    col = X.copy()
    col[:, 3] = col[:, 0] + 2 * col[:, 1]
    add("19_exactly_collinear.csv", csv(col, names, fmt="{:.10g}"), "ok",
        "is an exact linear combination of", "delta = alpha + 2 beta; one of them is rebuilt from the protected others")
    near = X.copy()
    near[:, 3] = near[:, 0] + near[:, 1] + 1e-6 * rng.standard_normal(len(near)) * near[:, 0].std()
    add("20_nearly_collinear.csv", csv(near, names, fmt="{:.17g}"), "ok", note="condition number about 1e12")
    wide = table(rng, n=5, m=10)
    add("21_more_columns_than_rows.csv", csv(wide, [f"v{i}" for i in range(10)]), "5 records; protection needs at least 10", "5 records for 10 variables")
    add("22_csv_injection.csv", ("name,alpha,beta\n" + "".join(
        f"{['=cmd|/C calc!A0', '+1+1', '-2', '@SUM(A1)', 'plain'][i % 5]},{a:.2f},{b:.2f}\n"
        for i, (a, b) in enumerate(X[:, :2]))).encode(), "ok", note="text formulas neutralised in the release")
    add("23_names_spaces_unicode.csv", csv(X, ["net profit €", "Größe (m²)", "年收入", "  padded  "]), "ok")
    add("24_names_html_script.csv", csv(X, ["<script>alert(1)</script>", "<b>bold</b>", "a&amp;b", "<img src=x onerror=alert(2)>"]),
        "ok", note="names rendered as text")
    add("25_binary.csv", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)), "binary file")
    add("26_ragged_rows.csv", b"a,b,c\n1,2,3\n4,5\n6,7,8,9,10\n1,2,3\n", "different numbers of fields")
    add("27_text_only.csv", b"name,city\nann,rome\nbob,oslo\ncid,lima\n", "0 numeric column", "0 numeric column(s) to protect")
    add("28_tab_separated.tsv", csv(X, names, sep="\t"), "ok")
    heavy = rng.standard_cauchy((200, 4)) * 1000
    add("29_heavy_tails.csv", csv(heavy, names, fmt="{:.10g}"), "ok", note="Cauchy columns")
    scales = table(rng, n=60, m=4)
    scales[:, 0] *= 1e-12
    scales[:, 1] *= 1e12
    add("30_tiny_and_huge_scales.csv", csv(scales, names, fmt="{:.17g}"), "ok", note="1e-12 and 1e12 in one file")
    add("31_whitespace_and_crlf.csv", csv(X, names).replace(b",", b" , ").replace(b"\n", b"\r\n"), "ok")
    add("32_single_row_header_typo.csv", b"alpha,beta,\n1,2,\n3,4,\n5,6,\n7,9,\n",
        "4 records; protection needs at least 10", "4 record(s). Fix: at least 10",
        note="trailing separator gives an empty unnamed column, which is dropped; 4 records are too few to protect")
    try:
        from openpyxl import Workbook

        wb = Workbook()
        ws = wb.active
        ws.append(["alpha", "beta", "total"])
        for i, (a, b) in enumerate(X[:, :2], start=2):
            ws.append([round(float(a), 2), round(float(b), 2), f"=A{i}+B{i}"])
        ws.merge_cells("A45:C45")
        ws["A45"] = "Merged note row"
        import io

        buf = io.BytesIO()
        wb.save(buf)
        add("33_excel_formulas_merged.xlsx", buf.getvalue(), "missing values (NaN) in 44",
            "hold formulas without stored results", "formulas without stored values and a merged note row")
    except ImportError:
        pass
    (HERE / "expected.json").write_text(json.dumps(cases, indent=1, ensure_ascii=False))
    print(f"{len(cases)} cases written to {HERE}")


if __name__ == "__main__":
    main()
