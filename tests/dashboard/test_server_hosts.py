"""The dashboard's websocket refuses a Host header it does not serve (issue 25, point 1):
a page on another name that resolves to this machine (DNS rebinding) cannot reach the app.
A real ``streamlit run`` with the project's .streamlit/config.toml, spoken to over a raw
socket so that the Host and Origin headers are exactly what an attacker's page would send."""

from pathlib import Path

import pytest

from conftest import ws_upgrade

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def port(streamlit_url):
    return int(streamlit_url.rsplit(":", 1)[1])


def _upgrade(port, host):
    """The status line of a websocket upgrade of /_stcore/stream with this Host and a
    matching Origin."""
    return ws_upgrade(port, host, f"http://{host}")


def test_a_foreign_host_is_refused_and_local_names_are_served(port):
    assert " 101 " in _upgrade(port, f"localhost:{port}")
    assert " 101 " in _upgrade(port, f"127.0.0.1:{port}")
    for host in (f"evil.example:{port}", "evil.example", f"localhost.evil.example:{port}", f"127.0.0.1.nip.io:{port}"):
        status = _upgrade(port, host)
        assert " 101 " not in status, (host, status)
