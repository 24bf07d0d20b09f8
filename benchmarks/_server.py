"""Start ``streamlit run app.py`` on a free local port for the browser benchmarks."""

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def start_streamlit():
    """(process, url) of a dashboard that answers its health check (up to 60 s)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "ui", "--server.headless", "true",
                             "--server.port", str(port), "--server.address", "127.0.0.1"], cwd=ROOT,
                            env=dict(os.environ, STREAMLIT_BROWSER_GATHER_USAGE_STATS="false"),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(120):
        try:
            if urllib.request.urlopen(url + "/_stcore/health", timeout=2).read().strip() == b"ok":
                break
        except OSError:
            time.sleep(0.5)
    return proc, url
