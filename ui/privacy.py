"""No outbound connection from the dashboard server: Streamlit's own look-ups, switched off.

Streamlit 1.67 (pinned in requirements.txt) opens connections to the outside on its own in
two places that no configuration option turns off:

* the WebSocket origin check (``server_util.is_url_from_allowed_origins``), reached by every
  request whose Origin is neither localhost nor the request's own host, calls
  ``net_util.get_internal_ip`` (a UDP ``connect`` to 8.8.8.8 to learn the local address) and
  ``net_util.get_external_ip`` (an HTTP GET to checkip.amazonaws.com, retried on every such
  request while it fails); the same two print the "Network URL"/"External URL" at start-up
  when the server listens on every address (0.0.0.0);
* the e-mail prompt of a non-headless first run posts the address typed to Streamlit
  (``credentials._send_email``); the project's config is headless, this is a second lock.

``apply()`` replaces these three with functions that answer "unknown" (None) without touching
the network. The origin check only gets stricter: a foreign origin was refused before (the
look-ups fail here, or return addresses that are not its host) and is refused now; localhost,
127.0.0.1, the request's own host and ``server.corsAllowedOrigins`` are still accepted.

``app.py`` imports this module first, so the patch holds from the first page load on. Streamlit
runs no project code before the first session, so to have it in place from the server's first
request, start the dashboard with ``python -m ui`` (same options as
``streamlit run app.py``, e.g. ``python -m ui --server.port 8502``).
"""

import sys
from pathlib import Path

APP = Path(__file__).resolve().parents[1] / "app.py"
# (module, attribute) pairs replaced by apply()
_TARGETS = (("streamlit.net_util", "get_external_ip"), ("streamlit.net_util", "get_internal_ip"),
            ("streamlit.runtime.credentials", "_send_email"))


def _unknown(*_args, **_kwargs):
    """Stands in for a look-up that would open a connection: the answer is unknown."""
    return None



def apply():
    """Replace Streamlit's network look-ups by ``_unknown`` (idempotent); returns the names
    patched. Raises RuntimeError when one is missing (a Streamlit other than the pinned one)."""
    import importlib

    done = []
    for module_name, attr in _TARGETS:
        module = importlib.import_module(module_name)
        if not callable(getattr(module, attr, None)):
            raise RuntimeError(f"{module_name}.{attr} not found: ui/privacy.py patches Streamlit as pinned in "
                               "requirements.txt; check this Streamlit's network look-ups and update _TARGETS")
        setattr(module, attr, _unknown)
        done.append(f"{module_name}.{attr}")
    return done


def main(argv=None):
    """``streamlit run app.py [options]`` with ``apply()`` done before the server starts."""
    apply()
    from streamlit.web import cli

    sys.argv = ["streamlit", "run", str(APP), *(sys.argv[1:] if argv is None else argv)]
    return cli.main()


apply()

if __name__ == "__main__":
    main()
