"""Protection: the option schema, data preparation, the pipeline, its results, strata and weights.

Imports nothing: each module is imported by its full name."""
