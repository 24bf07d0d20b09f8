"""Every input is bounded before it is read (issue "hostile files"): recipes by size and
nesting, .xlsx sheets by the rows and cells their zip holds, CSV by header width, line and
value length, Parquet by the kinds of its columns, Dask data sets naming the file that
fails and what differs.  Each refusal is one line, fast, naming the limit.  The big cases
are built small with the limit lowered (monkeypatch); the full-size ones were measured by
hand (see the report of the change)."""

import glob
import io
import json
import os
import time
import zipfile

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sdccore
from sdccore._io import read as _io
from sdccore._protect import recipe as _recipe
from sdccore._io.limits import _over, budget, header_fields, long_line
from sdccore._protect.recipe import Recipe, json_depth
from conftest import run_cli

RECIPES = os.path.join(os.path.dirname(__file__), "..", "data", "recipes")


def _one_error_line(code, err):
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


@pytest.fixture()
def small_csv(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "t.csv"
    pd.DataFrame(rng.normal(size=(40, 3)), columns=["a", "b", "c"]).to_csv(path, index=False)
    return path


# ----------------------------------------------------------------------------- 1. recipes

def test_recipe_from_dev_zero_is_refused_after_reading_at_most_the_limit(small_csv, tmp_path):
    t = time.perf_counter()
    code, _, err = run_cli(["protect", str(small_csv), "--recipe", "/dev/zero", "--out", str(tmp_path / "o.csv")])
    line = _one_error_line(code, err)
    assert "MAX_RECIPE_BYTES" in line and "holds more than 4.0 MB; a recipe is at most 4.0 MB" in line
    assert time.perf_counter() - t < 10
    assert not (tmp_path / "o.csv").exists()


def test_recipe_size_limit_is_exact(tmp_path, monkeypatch):
    monkeypatch.setattr(_recipe, "MAX_RECIPE_BYTES", 100)
    ok, big = tmp_path / "ok.json", tmp_path / "big.json"
    ok.write_bytes(b" " * 100)
    big.write_bytes(b" " * 101)
    assert _recipe.read_recipe(ok) == b" " * 100
    with pytest.raises(ValueError, match="big.json holds more than"):
        _recipe.read_recipe(big)
    with pytest.raises(ValueError, match=r"the recipe is 202 bytes; a recipe is at most 100 bytes \(sdccore"):
        Recipe.from_json("{" + " " * 200 + "}")


def test_json_depth_by_hand():
    assert json_depth("") == 0 and json_depth("1") == 0 and json_depth('"[[["') == 0
    assert json_depth("[[[]]]") == 3
    assert json_depth('{"a": "[[[\\"[[", "b": [[1], {"c": []}]}') == 4  # brackets in strings, escaped quotes
    assert json_depth("[" * 100_000 + "]" * 100_000) == 100_000


def test_deep_recipe_is_one_value_error_not_recursion(small_csv, tmp_path):
    with pytest.raises(ValueError, match=r"nested too deeply to be a recipe \(21 levels; at most 20"):
        Recipe.from_json("[" * 21 + "]" * 21)
    with pytest.raises(ValueError, match="must hold a JSON object"):  # 20 levels: parsed, then refused as no object
        Recipe.from_json("[" * 20 + "]" * 20)
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    code, _, err = run_cli(["protect", str(small_csv), "--recipe", str(tmp_path / "deep.json"),
                            "--out", str(tmp_path / "o.csv")])
    assert "100000 levels" in _one_error_line(code, err)


# ----------------------------------------------------------------------------- 7. recipe keys

def test_allow_unsafe_in_a_recipe_is_refused_in_one_line(small_csv, tmp_path):
    (tmp_path / "r.json").write_text(json.dumps({"method": "rankswap", "seed": 1, "allow_unsafe": "because"}))
    code, _, err = run_cli(["protect", str(small_csv), "--recipe", str(tmp_path / "r.json"),
                            "--out", str(tmp_path / "o.csv")])
    line = _one_error_line(code, err)
    assert "'allow_unsafe', which is not an option" in line and "--allow-unsafe" in line
    assert "multiple values" not in line
    with pytest.raises(ValueError, match="'allow_unsafe', which is not an option"):
        Recipe({"method": "pca", "allow_unsafe": "x"})  # built directly (the dashboard, --set)
    with pytest.raises(ValueError, match="'data', which is not an option"):
        Recipe.from_dict({"method": "pca", "data": [1, 2]})


def test_unknown_recipe_keys_are_named_with_the_valid_ones():
    with pytest.raises(ValueError) as exc:
        Recipe.from_dict({"method": "rankswap", "seed": 1, "bogus": 1, "k": 3}, source="r.json")
    msg = str(exc.value)
    assert msg.startswith("r.json holds key(s) 'bogus', 'k' that are not options of method 'rankswap'")
    assert ("bounds, exchange, exclude, floors, household, household_ids, k_anonymity, keys, method, p, pram, "
            "pram_alpha, pram_pd, recode, rounding, seed, sensitive, tail, transform, weights") in msg
    assert "\n" not in msg


def test_known_and_legacy_recipe_keys_still_load():
    r = Recipe.from_dict({"method": "magg", "noise": "exact", "k": 3, "recipe_version": 2, "rng": 5})
    assert r.options["noise_model"] == "exact" and r.seed == 5
    r3 = Recipe.from_dict({"method": "noise", "noise": 0.1, "recipe_version": 3})  # protect translates it later
    assert r3.options["noise"] == 0.1
    assert Recipe.from_dict({"method": "no-such-method", "x": 1}).options["x"] == 1  # protect names the methods
    for path in sorted(glob.glob(os.path.join(RECIPES, "*.json"))):  # every fixture the tool wrote
        with open(path, encoding="utf-8") as fh:
            Recipe.from_json(fh.read(), source=path)


# ----------------------------------------------------------------------------- 2. xlsx bombs

_HEAD = b'<?xml version="1.0" encoding="UTF-8"?>'


def _workbook(sheet_xml, tmp_path, name="b.xlsx"):
    """A real workbook (openpyxl) whose first sheet's XML is replaced by ``sheet_xml``."""
    from openpyxl import Workbook

    wb = Workbook()
    wb.active.append(["x"])
    src = io.BytesIO()
    wb.save(src)
    path = tmp_path / name
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for info in zin.infolist():
            z.writestr(info.filename, sheet_xml if info.filename == "xl/worksheets/sheet1.xml"
                       else zin.read(info.filename))
    return path


def _rows(n, prefix=""):
    p = prefix
    body = f"<{p}row><{p}c t=\"inlineStr\"><{p}is><{p}t>x</{p}t></{p}is></{p}c></{p}row>".encode()
    body += f"<{p}row><{p}c><{p}v>1</{p}v></{p}c></{p}row>".encode() * (n - 1)
    ns = f' xmlns{":" + p[:-1] if p else ""}="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
    return (_HEAD + f"<{p}worksheet{ns}><{p}sheetData>".encode() + body
            + f"</{p}sheetData></{p}worksheet>".encode())


def test_tag_counts_are_exact_across_chunks():
    n = 100_000  # 2.6 MB of XML: three 1 MB chunks
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("s.xml", _rows(n))
        z.writestr("p.xml", _rows(n, "x:"))
    zf = zipfile.ZipFile(buf)
    for part in ("s.xml", "p.xml"):
        assert _over(zf, zf.getinfo(part), n) is None
        assert _over(zf, zf.getinfo(part), n - 1) == b"row"


@pytest.mark.parametrize("prefix", ["", "x:"])
def test_xlsx_bomb_without_dimension_is_refused_before_parsing(tmp_path, monkeypatch, prefix):
    """6 million rows in 905 KB hung the reader over 11 minutes; here 40,000 rows against a
    limit of 5,000 cells (and 16,384 for a header row), refused from the zip within a second."""
    monkeypatch.setattr(_io, "MAX_EXCEL_CELLS", 5_000)
    path = _workbook(_rows(40_000, prefix), tmp_path)
    assert path.stat().st_size < 20_000
    t = time.perf_counter()
    with pytest.raises(ValueError, match=r"sheet1.xml holds more than 5,000 rows \(counted before reading\)"):
        sdccore.read_table(path)
    assert time.perf_counter() - t < 5
    code, _, err = run_cli(["protect", str(path), "--out", str(tmp_path / "o.csv")])
    assert "MAX_EXCEL_CELLS" in _one_error_line(code, err)


def test_xlsx_under_the_cell_limit_still_reads(tmp_path, monkeypatch):
    monkeypatch.setattr(_io, "MAX_EXCEL_CELLS", 5_000)
    from openpyxl import Workbook

    wb = Workbook()
    wb.active.append(["a", "b", "c"])
    for i in range(1_500):  # 4,503 cells, 1,501 rows
        wb.active.append([i, i * 2.5, i % 7])
    wb.save(tmp_path / "ok.xlsx")
    data = sdccore.read_table(tmp_path / "ok.xlsx").data
    assert data.shape == (1_500, 3) and data["b"].iloc[-1] == 1_499 * 2.5


def test_xlsx_sheet_over_the_byte_limit_is_refused_from_the_directory(tmp_path, monkeypatch):
    monkeypatch.setattr(_io, "MAX_SHEET_BYTES", 20_000)  # the theme is 10 KB
    with pytest.raises(ValueError, match=r"sheet1.xml unpacks to 26,\d\d\d bytes; at most 20,000 bytes a sheet .*"
                                         r"MAX_SHEET_BYTES"):
        sdccore.read_table(_workbook(_rows(1_000), tmp_path))


# ----------------------------------------------------------------------------- 3, 4. CSV shapes

def test_header_fields_by_hand():
    assert header_fields("a,b,c", ",", 10) == 3
    assert header_fields('"a,b",c,"d,,e"', ",", 2) == 3  # over the quick count: quotes respected
    assert header_fields("a;b;c", ",", 10) == 1


def test_csv_of_200000_columns_is_refused_from_its_header(tmp_path):
    path = tmp_path / "wide.csv"
    path.write_text(",".join(f"c{i}" for i in range(200_000)) + "\n" + ",".join(["1"] * 200_000) + "\n")
    t = time.perf_counter()
    with pytest.raises(ValueError, match=r"the file has 200000 columns; at most 2000 can be handled \(counted in its header line"):
        sdccore.read_table(path)
    assert time.perf_counter() - t < 5


def test_width_limit_is_exact(monkeypatch):
    monkeypatch.setattr(_io, "MAX_COLUMNS", 4)
    assert sdccore.read_table(b"a,b,c,d\n1,2,3,4\n", "x.csv").data.shape == (1, 4)
    with pytest.raises(ValueError, match="has 5 columns"):
        sdccore.read_table(b"a,b,c,d,e\n1,2,3,4,5\n", "x.csv")
    assert sdccore.read_table(b'"a,x",b,c,d\n1,2,3,4\n', "x.csv").data.shape == (1, 4)  # quoted comma


def test_long_line_by_hand():
    assert long_line("ab\n" + "x" * 10 + "\nc", 4) == (2, 10)
    assert long_line(b"ab\n" + b"x" * 10, 4) == (2, 10)
    assert long_line("ab\n" + "x" * 4 + "\nc", 4) is None  # at the limit: kept
    assert long_line("ab\r" + "x" * 3 + "\r" + "y" * 3, 4) is None  # \r ends lines too
    assert long_line("x" * 9, 8) == (1, 9) and long_line("", 8) is None


def test_csv_of_one_huge_field_is_refused_fast(tmp_path):
    path = tmp_path / "one.csv"
    path.write_bytes(b"a" * (_io.MAX_LINE_BYTES * 3))
    t = time.perf_counter()
    with pytest.raises(ValueError, match=r"line 1 of the file is 12.0 MB long; a line is at most 4.0 MB"):
        sdccore.read_table(path)
    assert time.perf_counter() - t < 5


def test_line_limit_names_the_line(monkeypatch):
    monkeypatch.setattr(_io, "MAX_LINE_BYTES", 100)
    ok = b"a,b\n" + b"1,2\n" * 5 + b"3," + b"9" * 90 + b"\n"
    assert sdccore.read_table(ok, "x.csv").data.shape == (6, 2)
    with pytest.raises(ValueError, match="line 8 of the file is 202 bytes long; a line is at most 100 bytes"):
        sdccore.read_table(ok + b"3," + b"9" * 200 + b"\n", "x.csv")


def test_a_quoted_value_over_many_lines_is_refused(monkeypatch):
    monkeypatch.setattr(_io, "MAX_VALUE_CHARS", 100)
    text = b'a,b\n1,x\n2,"' + b"y" * 20 + b"\n" + b"z" * 99 + b'"\n'
    with pytest.raises(ValueError, match=r"column 'b' holds a value of 120 characters \(record 2\)"):
        sdccore.read_table(text, "x.csv")
    assert sdccore.read_table(b'a,b\n1,x\n2,"y\nz"\n', "x.csv").data["b"].tolist() == ["x", "y\nz"]


def test_budget_by_hand():
    assert budget(["ab", "cd", "ef"], 5) == ["ab", "cd"]
    assert budget(["abcdef", "x"], 3) == ["abc"]


# ----------------------------------------------------------------------------- 5. Parquet kinds

def _parquet(table):
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def test_parquet_nested_columns_are_named_with_their_types():
    raw = _parquet(pa.table({"x": [1.0, 2.0], "tags": [[1], [2, 3]], "s": [{"a": 1}, {"a": 2}]}))
    with pytest.raises(ValueError) as exc:
        sdccore.read_table(raw, "n.parquet")
    msg = str(exc.value)
    assert "tags (list<element: int64>)" in msg and "s (struct<a: int64>)" in msg and "flatten" in msg
    assert "codec" not in msg


def test_parquet_binary_columns_read_as_text_or_are_named():
    good = _parquet(pa.table({"x": [1.0, 2.0, 4.0], "y": [2.0, 1.0, 0.5],
                              "t": pa.array([b"a", b"b", b"a"], pa.binary())}))
    assert [str(v) for v in sdccore.read_table(good, "g.parquet").data["t"]] == ["a", "b", "a"]
    bad = _parquet(pa.table({"x": [1.0, 2.0], "blob": pa.array([b"\xff\x00", b"\x01"], pa.binary())}))
    with pytest.raises(ValueError, match=r"column\(s\) blob \(binary\) holding binary data that is not UTF-8"):
        sdccore.read_table(bad, "b.parquet")


# ----------------------------------------------------------------------------- 6. Dask data sets

@pytest.fixture()
def parts(tmp_path):
    rng = np.random.default_rng(1)
    df = pd.DataFrame(rng.normal(size=(50, 3)), columns=["a", "b", "c"])
    df.to_parquet(tmp_path / "p0.parquet")
    return tmp_path, df


def test_a_corrupt_file_in_the_glob_is_named(parts):
    pytest.importorskip("dask")
    from sdccore._io.partitions import read_dask

    folder, _ = parts
    (folder / "p1.parquet").write_bytes(b"PAR1 not a parquet file")
    with pytest.raises(ValueError, match=r"p1.parquet could not be read as Parquet \(Parquet magic bytes"):
        read_dask(str(folder / "*.parquet"))


@pytest.mark.parametrize("change,expect", [
    (lambda d: d[["c", "a", "b"]], "(the same columns in another order: c, a, b)"),
    (lambda d: d.drop(columns="b").assign(d=1.0, a=d["a"].astype("float32")),
     "(missing column(s) b; extra column(s) d; other type(s) than in p0.parquet: a is float, not double)"),
])
def test_a_file_with_other_columns_says_which(parts, change, expect):
    pytest.importorskip("dask")
    from sdccore._io.partitions import read_dask

    folder, df = parts
    change(df).to_parquet(folder / "p1.parquet")
    with pytest.raises(ValueError) as exc:
        read_dask(str(folder / "*.parquet"))
    assert str(exc.value).startswith("p1.parquet has other columns or types than p0.parquet " + expect), exc.value


def test_at_scale_a_nested_glob_names_the_file_by_its_folder_and_csv_headers_are_compared(tmp_path):
    """Files of one name in several folders (nest/*/data.parquet): the failing one is named
    by its path below the shared folder, not by a base name all of them share; CSV files
    whose headers differ say which columns differ, as Parquet files do."""
    from sdccore._io.partitions import read_dask

    df = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [4.0, 5.0, 6.0]})
    for part, frame in (("x", df), ("y", df.rename(columns={"b": "c"}))):
        (tmp_path / "nest" / part).mkdir(parents=True)
        frame.to_parquet(tmp_path / "nest" / part / "data.parquet")
    with pytest.raises(ValueError, match=r"^y/data.parquet has other columns or types than x/data.parquet "
                                         r"\(missing column\(s\) b; extra column\(s\) c\)"):
        read_dask(str(tmp_path / "nest" / "*" / "data.parquet"))
    csvs = tmp_path / "csvs"
    csvs.mkdir()
    df.to_csv(csvs / "p0.csv", index=False)
    df[["b", "a"]].to_csv(csvs / "p1.csv", index=False)
    df.rename(columns={"a": "A"}).to_csv(csvs / "p2.csv", index=False)
    with pytest.raises(ValueError, match=r"^p1.csv has another header than p0.csv \(the same columns in another "
                                         r"order: b, a\)"):
        read_dask(str(csvs / "p[01].csv"))
    with pytest.raises(ValueError, match=r"^p2.csv has another header than p0.csv \(missing column\(s\) a; extra "
                                         r"column\(s\) A\)"):
        read_dask(str(csvs / "p[02].csv"))


def test_an_xlsx_whose_dimension_is_stale_is_read(tmp_path):
    """Some writers leave <dimension ref="A1:XFD1048576"> on a small sheet: its cells are
    counted, not its dimension believed (the file was refused as 17 billion cells)."""
    from openpyxl import Workbook

    wb = Workbook()
    ws = wb.active
    ws.append(["a", "b"])
    for i in range(5):
        ws.append([i + 1.5, 2 * i + 0.25])
    path = tmp_path / "stale.xlsx"
    wb.save(path)
    with zipfile.ZipFile(path) as z:
        parts = {n: z.read(n) for n in z.namelist()}
    sheet = parts["xl/worksheets/sheet1.xml"].decode()
    import re as _re

    sheet = _re.sub(r'<dimension ref="[^"]*"\s*/>', '<dimension ref="A1:XFD1048576"/>', sheet)
    assert 'A1:XFD1048576' in sheet
    parts["xl/worksheets/sheet1.xml"] = sheet.encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for n, b in parts.items():
            z.writestr(n, b)
    got = sdccore.read_table(path).data
    assert got.shape == (5, 2) and got["b"].tolist() == [0.25, 2.25, 4.25, 6.25, 8.25]
