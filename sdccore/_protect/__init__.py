"""Protection: the option schema, the recipe (the options, versioned), data preparation, the pipeline, its results, strata and weights.

Imports nothing: each module is imported by its full name."""
