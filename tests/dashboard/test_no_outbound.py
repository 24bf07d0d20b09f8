"""The dashboard server opens no connection to the outside ("privacy of the server"): a real
server, probed with foreign Origin headers (which made Streamlit look up its external IP at
checkip.amazonaws.com and its local IP by a UDP connect to 8.8.8.8), logs no outbound attempt
and still refuses those origins. Outbound attempts are counted inside the server process by a
``sitecustomize`` (on PYTHONPATH) that records every ``getaddrinfo`` of a non-loopback name and
every ``connect``/``connect_ex`` of an IP socket to a non-loopback address."""

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from conftest import ws_upgrade

ROOT = Path(__file__).resolve().parents[2]

PROBE = r'''
import ipaddress, os, socket, traceback
_LOG = os.environ["SDC_OUTBOUND_LOG"]

def _local(host):
    if host in (None, "", b"", "localhost", b"localhost"):
        return True
    host = host.decode() if isinstance(host, bytes) else str(host)
    try:
        ip = ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        return False
    return ip.is_loopback or ip.is_unspecified

def _log(kind, dest):
    with open(_LOG, "a") as f:
        f.write(f"{kind} {dest!r} via {traceback.format_stack(limit=5)[0].strip()!r}\n")

_getaddrinfo = socket.getaddrinfo
def getaddrinfo(host, *args, **kwargs):
    if not _local(host):
        _log("getaddrinfo", host)
    return _getaddrinfo(host, *args, **kwargs)
socket.getaddrinfo = getaddrinfo

for _name in ("connect", "connect_ex"):
    def _wrap(self, address, _orig=getattr(socket.socket, _name), _name=_name):
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _local(address[0]):
            _log(_name, address)
        return _orig(self, address)
    setattr(socket.socket, _name, _wrap)
'''

FOREIGN = ("http://evil.example", "https://evil.example:8443", "http://10.1.2.3", "null")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url, origin=None, timeout=10):
    req = urllib.request.Request(url, headers={"Origin": origin} if origin else {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def _upgrade(port, origin):
    """Status line of a websocket upgrade of /_stcore/stream with Host 127.0.0.1:port (what a
    browser sends for a page on another site opening ws://127.0.0.1:port) and this Origin."""
    return ws_upgrade(port, f"127.0.0.1:{port}", origin)


@pytest.fixture
def server(tmp_path):
    """Starts a server with the outbound probe; yields (start(cmd) -> port, log path)."""
    (tmp_path / "sitecustomize.py").write_text(PROBE)
    log = tmp_path / "outbound.log"
    log.write_text("")
    procs = []

    def start(cmd):
        port = _free_port()
        env = dict(os.environ, PYTHONPATH=str(tmp_path), SDC_OUTBOUND_LOG=str(log),
                   STREAMLIT_BROWSER_GATHER_USAGE_STATS="false")
        out = open(tmp_path / "server.log", "wb")
        procs.append((subprocess.Popen([sys.executable, *cmd, "--server.headless", "true", "--server.port",
                                        str(port)], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT), out))
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                if _get(f"http://127.0.0.1:{port}/_stcore/health")[1].strip() == b"ok":
                    return port
            except OSError:
                time.sleep(0.2)
        pytest.fail(f"server did not become healthy in 60 s: {(tmp_path / 'server.log').read_text()[-2000:]}")

    yield start, log
    for proc, out in procs:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        out.close()


def _probe_foreign(port):
    """Foreign-origin websocket upgrades (all refused) and HTTP requests (all answered)."""
    for origin in FOREIGN:
        for _ in range(2):  # a failed external-IP look-up was retried on every request
            status = _upgrade(port, origin)
            assert status.startswith("HTTP/1.1 403"), (origin, status)
        assert _get(f"http://127.0.0.1:{port}/_stcore/health", origin) == (200, b"ok")
        assert _get(f"http://127.0.0.1:{port}/_stcore/host-config", origin)[0] == 200
    # the page itself is still served to localhost, and its websocket is accepted
    assert _upgrade(port, f"http://localhost:{port}").startswith("HTTP/1.1 101")
    assert _upgrade(port, f"http://127.0.0.1:{port}").startswith("HTTP/1.1 101")


def test_launcher_makes_no_outbound_connection_from_the_first_request(server):
    """``python -m ui`` (the README's start command) patches before the server starts: foreign origins probed right
    after start-up, before any page load, trigger no look-up (unpatched: 1 UDP connect to
    8.8.8.8 + 2 getaddrinfo of checkip.amazonaws.com per refused request)."""
    start, log = server
    port = start(["-m", "ui", "--server.address", "0.0.0.0"])  # 0.0.0.0: start-up banner look-ups too
    _probe_foreign(port)
    time.sleep(0.5)
    assert log.read_text() == ""


def test_streamlit_run_makes_no_outbound_connection_once_the_app_ran(server):
    """``streamlit run app.py``: app.py imports ui.privacy first, so once the script has run
    (here through Streamlit's script health check, a real run of app.py) foreign origins
    trigger no look-up; the run itself opens nothing either."""
    start, log = server
    port = start(["-m", "streamlit", "run", "app.py", "--server.address", "127.0.0.1",
                  "--server.scriptHealthCheckEnabled", "true"])
    # the answer waits for a whole first run of app.py (its imports): 13.7 s on a slow 2-core machine
    assert _get(f"http://127.0.0.1:{port}/_stcore/script-health-check", timeout=90) == (200, b"ok")
    _probe_foreign(port)
    time.sleep(0.5)
    assert log.read_text() == ""


def test_patched_origin_check_refuses_foreign_origins_without_network(monkeypatch):
    from streamlit import config, net_util
    from streamlit.runtime import credentials
    from streamlit.web.server import server_util

    for name in ("get_external_ip", "get_internal_ip"):
        monkeypatch.setattr(net_util, name, getattr(net_util, name))  # restored after the test
    monkeypatch.setattr(credentials, "_send_email", credentials._send_email)
    from ui import privacy
    assert privacy.apply() == ["streamlit.net_util.get_external_ip", "streamlit.net_util.get_internal_ip",
                               "streamlit.runtime.credentials._send_email"]
    assert net_util.get_external_ip() is None and net_util.get_internal_ip() is None
    assert credentials._send_email("someone@example.org") is None

    def no_network(*args, **kwargs):
        raise AssertionError(f"network touched: {args}")

    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    monkeypatch.setattr(socket.socket, "connect", no_network)
    assert config.get_option("server.enableCORS") is True
    for origin in FOREIGN:
        assert server_util.is_url_from_allowed_origins(origin) is False, origin
    for origin in ("http://localhost:8501", "http://127.0.0.1:8501", "http://0.0.0.0:8501"):
        assert server_util.is_url_from_allowed_origins(origin) is True, origin
    monkeypatch.setattr(config, "get_option", lambda key: ["https://sdc.example.org"]
                        if key == "server.corsAllowedOrigins" else True)
    assert server_util.is_url_from_allowed_origins("https://sdc.example.org") is True


def test_apply_names_what_is_missing(monkeypatch):
    from streamlit import net_util

    from ui import privacy

    monkeypatch.delattr(net_util, "get_external_ip")
    with pytest.raises(RuntimeError, match=r"streamlit\.net_util\.get_external_ip not found.*requirements\.txt"):
        privacy.apply()
