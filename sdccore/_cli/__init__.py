"""The command line's parts (the entry point is sdccore/__main__.py): its Dask cluster, its files, what it prints.

Imports nothing: each module is imported by its full name."""
