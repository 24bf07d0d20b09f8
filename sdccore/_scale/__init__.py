"""The Dask engine (files beyond one machine's memory): reading, the pipeline's steps at scale, exchanges, floors, measures and the scale forms of M-AGG and rank swapping.

Imports nothing: each module is imported by its full name."""
