"""The reports of a release and the tables, charts and words they share with the dashboard and
the command line (one source); the public namespace ``sdccore.report`` is ``api``."""
