"""The dashboard's frame: its pages, and the one way into each of them.

Streamlit 1.67 runs a page's script on its own, without ``app.py``, when the first session
of a fresh server opens a page's address directly (``/run``, ``/explore``, a bookmark, a
reload after a restart): a folder named ``pages/`` beside the entry point makes it emulate
its first multipage scheme until some session has called ``st.navigation``. Such a run has
no session set-up (data, roles, floors: the page failed with ``KeyError 'roles'``), no
sidebar and no privacy patch (AppTest runs every page this way: it resets that state before
each run). Every page therefore starts with ``shell.enter()``: inside ``app.py`` it does
nothing; on its own it runs ``app.py`` in its place, within the same script run (so a click
that started the run reaches the page), then stops. ``app.py`` declares the app's navigation,
which ends the emulation for the whole server, and runs the page the address asked for.
"""

import runpy
import threading
from contextlib import contextmanager

from ui import privacy  # first: the outbound look-ups off, whichever script runs first

import streamlit as st

# (script, title, icon); the first is the default page
PAGES = (
    ("pages/1_data.py", "1 Data", ":material/table:"),
    ("pages/2_explore.py", "2 Explore", ":material/insights:"),
    ("pages/3_configure.py", "3 Configure", ":material/tune:"),
    ("pages/4_run.py", "4 Run and compare", ":material/compare:"),
    ("pages/5_download.py", "5 Download", ":material/download:"),
    ("pages/6_history.py", "6 History", ":material/history:"),
)

_app = threading.local()  # a script run stays on one thread: app.py and the page it runs


def navigation():
    """The app's navigation (``st.navigation`` over ``PAGES``)."""
    return st.navigation([st.Page(path, title=title, icon=icon, default=not i)
                          for i, (path, title, icon) in enumerate(PAGES)])


@contextmanager
def app_run():
    """``app.py`` runs the page inside this: ``enter()`` then knows the frame is drawn."""
    _app.inside = True
    try:
        yield
    finally:
        _app.inside = False


def enter():
    """First line of every page: a page run without ``app.py`` is run through it instead."""
    if getattr(_app, "inside", False):
        return
    runpy.run_path(str(privacy.APP), run_name="__main__")
    st.stop()
