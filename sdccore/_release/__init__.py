"""The release: data and a recipe assembled into the file to publish, and its codebook.

Imports nothing: each module is imported by its full name."""
