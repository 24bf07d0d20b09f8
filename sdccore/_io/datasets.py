"""Sample data sets shipped with the package (copied from sdcMicro 5.8.1)."""

from __future__ import annotations

from importlib import resources

import pandas as pd

_DATASETS = {
    "tarragona": ("tarragona.csv", "834 companies of the Tarragona area, 1995: 13 continuous accounting figures (CASC reference set)."),
    "casc": ("casc.csv", "1080 US Census 1995 records, 13 continuous income/tax variables; PTOTVAL = PEARNVAL + POTHVAL exactly (CASC reference set)."),
    "eia": ("eia.csv", "4092 monthly US electric utility records, 1996: 10 continuous sales/revenue variables plus identifiers (CASC reference set)."),
    "testdata": ("testdata.csv", "4580 persons in 1000 households (sdcMicro's tutorial survey, IHSN): 8 categorical columns, age, 3 continuous amounts, household id, sampling and household weights."),
    "francdat": ("francdat.csv", "8 records (sdcMicro's francdat toy): 3 continuous variables, 4 categorical keys and a sampling weight."),
}

# Columns that are identifiers or categorical codes rather than measurements.
_ROLES = {
    "eia": {"identifier": ["UTILITYID", "UTILNAME"], "exclude": ["STATE", "YEAR", "MONTH"]},
    # codes, the household id and the weights released unchanged, never perturbed as data
    "testdata": {"exclude": ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex", "age", "hhcivil",
                             "ori_hid", "sampling_weight", "household_weights"]},
    "francdat": {"exclude": ["Key1", "Key2", "Key3", "Key4", "w"]},
}


def list_datasets() -> pd.DataFrame:
    """The bundled sample data sets.

    Returns
    -------
    DataFrame
        One row per data set: name, rows, columns and description.

    Examples
    --------
    >>> import sdccore
    >>> sdccore.list_datasets()["name"].tolist()
    ['tarragona', 'casc', 'eia', 'testdata', 'francdat']
    """
    rows = []
    for name, (fname, desc) in _DATASETS.items():
        df = load_dataset(name)
        rows.append({"name": name, "rows": df.shape[0], "columns": df.shape[1], "description": desc})
    return pd.DataFrame(rows)


def dataset_roles(name: str) -> dict:
    """Suggested roles for a bundled sample's columns that are not measurements.

    Parameters
    ----------
    name : str
        A name from ``list_datasets()`` ("tarragona", "casc", "eia", "testdata", "francdat").

    Returns
    -------
    dict
        {'identifier': [...], 'exclude': [...]}: columns to drop before release and columns
        released unchanged (codes, text).

    Examples
    --------
    >>> import sdccore
    >>> sorted(sdccore.dataset_roles("eia"))
    ['exclude', 'identifier']
    """
    _check(name)
    return {k: list(v) for k, v in _ROLES.get(name, {}).items()}


def _check(name):
    if not isinstance(name, str) or name not in _DATASETS:
        raise ValueError(f"unknown data set {name!r}; choose one of {', '.join(map(repr, _DATASETS))}.")


def load_dataset(name: str) -> pd.DataFrame:
    """Load a bundled sample data set.

    Parameters
    ----------
    name : str
        One of the names in ``list_datasets()``: "tarragona", "casc", "eia", "testdata" or "francdat".

    Returns
    -------
    DataFrame
        The records as shipped with sdccore (their provenance: docs/data.md).

    Examples
    --------
    >>> import sdccore
    >>> sdccore.load_dataset("tarragona").shape
    (834, 13)
    """
    _check(name)
    with resources.files("sdccore").joinpath("data", _DATASETS[name][0]).open("rb") as fh:
        return pd.read_csv(fh)
