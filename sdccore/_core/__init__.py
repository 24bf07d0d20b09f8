"""Ground floor: input validation, named random streams, decompositions, plausible values (transforms and bounds), missing cells, the results' summaries, the package's version.

Imports nothing: each module is imported by its full name."""
