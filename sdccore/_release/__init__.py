"""The release: its recipe, its assembly, its codebook.

Imports nothing: each module is imported by its full name."""
