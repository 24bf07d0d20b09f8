"""Files: reading (formats, separators, limits checked before parsing), text numbers, writing (formats, neutralised formulas), partitioned files for the Dask engine, the bundled data sets.

Imports nothing: each module is imported by its full name."""
