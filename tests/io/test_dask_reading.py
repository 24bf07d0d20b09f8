"""One reading and role pipeline for both engines (issue 25, point 2).

The Dask engine read CSV partitions with dask's own parser: numbers stored as text
("86,353") and '-' missing marks made a column text, and text went out unchanged (97.5 %
of cells byte-identical, exit 0, "risk floors met"); a unique text column went out without
--drop/--keep; ';' with decimal commas was not detected.  A hostile corpus goes through the
in-memory CLI (one file) and the Dask CLI (the same records split into files): the same
columns are read as numbers, and neither engine ever releases a number column unchanged."""

import os

import numpy as np
import pandas as pd
import pytest

import sdccore
from conftest import run_cli as _cli

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def tarr():
    return sdccore.load_dataset("tarragona")


@pytest.fixture(scope="module")
def scheduler():
    """One local cluster for the module's Dask runs, given to the CLI as --scheduler (each run
    started its own: a cluster's start was most of a run on these small files).  The CLI's
    own local cluster is tested in tests/cli/test_interrupt.py and
    tests/package/test_security_three.py.  One worker process (two before): the reading
    rules run in a worker, partition by partition, however many there are, and a second
    worker was half the cluster's start and a share of every run's messages."""
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        yield cluster.scheduler_address




def _corpus(tarr):
    """name -> (frame as text cells, to_csv keywords, extra CLI arguments)."""
    base = tarr.iloc[:, :6].copy()
    thousands = base.astype(object)
    thousands["SALES"] = [f"{v:,.0f}" for v in tarr["SALES"]]
    thousands["TREASURY"] = [f"\u20ac{v:,.2f}" for v in tarr["TREASURY"]]
    negparen = base.astype(object)
    negparen["SHORT.TERM.DEBT"] = [f"({v:.0f})" if i % 7 == 0 else f"{v:.0f}" for i, v in
                                   enumerate(tarr["SHORT.TERM.DEBT"])]
    with_name = base.copy()
    with_name.insert(0, "firm", [f"firm {i:04d}" for i in range(len(base))])
    return {
        "thousands separators and currency": (thousands, {}, []),
        "negatives in parentheses": (negparen, {}, []),
        "semicolons and decimal commas": (base, {"sep": ";", "decimal": ","}, []),
        "a unique text column": (with_name, {}, []),
        "a unique text column dropped": (with_name, {}, ["--drop", "firm"]),
    }


def _split(df, folder, kw):
    os.makedirs(folder)
    half = len(df) // 2
    df.iloc[:half].to_csv(os.path.join(folder, "a.csv"), index=False, **kw)
    df.iloc[half:].to_csv(os.path.join(folder, "b.csv"), index=False, **kw)


def test_the_hostile_corpus_gets_the_same_verdicts_in_memory_and_at_scale(tarr, scheduler, tmp_path):
    for i, (name, (df, kw, extra)) in enumerate(_corpus(tarr).items()):
        one = tmp_path / f"{i}.csv"
        df.to_csv(one, index=False, **kw)
        _split(df, tmp_path / f"parts{i}", kw)
        common = ["--method", "pca", "--seed", "1", "--allow-unsafe", "test corpus"] + extra
        code_m, _, err_m = _cli(["protect", str(one), "--out", str(tmp_path / f"m{i}.csv")] + common)
        code_d, _, err_d = _cli(["protect", str(tmp_path / f"parts{i}" / "*.csv"), "--engine", "dask",
                                 "--scheduler", scheduler, "--out", str(tmp_path / f"d{i}")] + common)
        assert code_m == code_d, (name, err_m, err_d)
        if code_m:
            assert err_m.strip().splitlines()[-1].split("(")[0] == err_d.strip().splitlines()[-1].split("(")[0], name
            continue
        mem = pd.read_csv(tmp_path / f"m{i}.csv", sep=kw.get("sep", ","), decimal=kw.get("decimal", "."))
        dask_out = pd.read_parquet(tmp_path / f"d{i}")
        assert list(mem.columns) == list(dask_out.columns), name
        for c in tarr.columns[:6]:
            # read as numbers by both engines, and protected: no column comes out as it went in
            assert pd.api.types.is_numeric_dtype(mem[c]) and pd.api.types.is_numeric_dtype(dask_out[c]), (name, c)
            orig = tarr[c].to_numpy(float)
            same = np.isclose(np.sort(dask_out[c].to_numpy(float)), np.sort(orig), rtol=0, atol=0.5).mean()
            assert not np.array_equal(dask_out[c].to_numpy(float), orig), (name, c)
            assert same < 0.5, (name, c, same)


def test_a_missing_mark_is_read_as_missing_and_refused_at_scale(tarr, scheduler, tmp_path):
    d = tarr.iloc[:, :5].astype(object)
    d.loc[3, "TREASURY"] = "-"
    _split(d, tmp_path / "p", {})
    code, _, err = _cli(["protect", str(tmp_path / "p" / "*.csv"), "--engine", "dask", "--scheduler", scheduler,
                         "--method", "pca", "--seed", "1", "--out", str(tmp_path / "o")])
    assert code == 2 and "missing or infinite values in TREASURY (1)" in err and "(exclude)" not in err
    assert "--keep" in err and not (tmp_path / "o").exists()


def test_a_text_cell_after_the_head_is_refused_not_released(tarr, tmp_path):
    """The head decides a column is numeric; a partition further on holding text there is
    refused with the column named (never read as text and passed through)."""
    from sdccore._scale.engine import read_dask
    d = tarr.iloc[:, :4].astype(object)
    d.loc[700, "SALES"] = "confidential"
    _split(d, tmp_path / "p", {})
    ddf = read_dask(str(tmp_path / "p" / "*.csv"))
    assert pd.api.types.is_numeric_dtype(ddf.dtypes["SALES"])
    with pytest.raises(ValueError, match="column 'SALES' holds numbers in the first records but 1 cell"):
        ddf.compute(scheduler="synchronous")


def test_partitions_read_as_read_table_reads_the_whole_file(tarr, tmp_path):
    """Two computations: read_table on one file and read_dask on its parts give the same frame."""
    from sdccore._scale.engine import read_dask
    d = tarr.iloc[:, :6].astype(object)
    d["SALES"] = [f"{v:,.0f}" for v in tarr["SALES"]]
    d.to_csv(tmp_path / "one.csv", index=False, sep=";")
    _split(d, tmp_path / "p", {"sep": ";"})
    whole = sdccore.read_table((tmp_path / "one.csv").read_bytes(), "one.csv").data
    parts = read_dask(str(tmp_path / "p" / "*.csv")).compute(scheduler="synchronous").reset_index(drop=True)
    pd.testing.assert_frame_equal(whole, parts, check_dtype=False)


def test_parquet_text_numbers_are_converted_at_scale(tarr, tmp_path):
    from sdccore._scale.engine import read_dask
    d = tarr.iloc[:, :4].copy()
    d["SALES"] = [f"{v:,.0f}" for v in tarr["SALES"]]
    os.makedirs(tmp_path / "p")
    d.iloc[:400].to_parquet(tmp_path / "p" / "a.parquet")
    d.iloc[400:].to_parquet(tmp_path / "p" / "b.parquet")
    got = read_dask(str(tmp_path / "p" / "*.parquet")).compute(scheduler="synchronous")
    np.testing.assert_array_equal(got["SALES"].to_numpy(), np.round(tarr["SALES"].to_numpy()))
