"""Choosing a release: repeated-run comparisons, their worker pool, the search and the recommendation.

Imports nothing: each module is imported by its full name."""
