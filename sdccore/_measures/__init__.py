"""What analysts keep and what a release risks, measured: the analyses' registry, evaluate, utility, analysis validity, regressions and their formulas.

Imports nothing: each module is imported by its full name."""
