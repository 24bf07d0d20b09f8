"""Files: reading (formats, separators, limits checked before parsing), text numbers, writing (formats, neutralised formulas), the bundled data sets.

Imports nothing: each module is imported by its full name."""
