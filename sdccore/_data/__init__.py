"""Looking at the data before protecting it: roles, checks, exploration, the removal curve, the factor-score audit.

Imports nothing: each module is imported by its full name."""
