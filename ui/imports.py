"""The library's heavy modules imported once per server process, by one thread at a time.

``sdccore`` loads scikit-learn, statsmodels and scipy.stats only when first used.  Two threads
importing them for the first time at once (the preload thread, a prefetch thread and a page)
can meet inside scikit-learn's own circular imports, where Python's import locks give up with
"cannot import name 'clone' from partially initialized module 'sklearn.base'": the page then
showed "This app has encountered an error" (the dashboard tests met it in 2 runs of 3 when the
Explore page was the first to compute).  Every thread that is about to call sdccore calls
``ensure()`` first: the first does the imports under a lock, the others wait for it once, and
after that it is a flag's check."""

from __future__ import annotations

import threading

import sdccore

_LOCK = threading.Lock()
_DONE = threading.Event()
# the public names whose modules load the heavy ones (the dashboard never names a private one)
NAMES = ("correlation_matrix", "compare", "recommend", "protect", "evaluate", "RiskFloors", "analyst_checks",
         "key_risk")


def ensure():
    if _DONE.is_set():
        return
    with _LOCK:
        if not _DONE.is_set():
            for name in NAMES:
                getattr(sdccore, name)
            import sklearn.ensemble  # noqa: F401 - the priors' boosting, the propensity fits
            import sklearn.linear_model  # noqa: F401
            import statsmodels.api  # noqa: F401 - the analysts' battery
            _DONE.set()
