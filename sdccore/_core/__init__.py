"""Ground floor: input validation, named random streams, decompositions, plausible values (transforms and bounds), missing cells.

Imports nothing: each module is imported by its full name."""
