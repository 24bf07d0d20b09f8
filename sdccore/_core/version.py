"""The package's version (pyproject.toml's, checked by tests/package/test_packaging.py): on the ground
floor, so the recipe records it without importing the package's face."""

__version__ = "0.1.0"
