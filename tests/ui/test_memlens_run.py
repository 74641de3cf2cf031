"""`memlens run` starts the served app (dashboard/app.py, an st.App) from any folder:
the server gets ready first, answers its health check on the port it was given,
serves the page without sending usage statistics, listens on this machine only
(127.0.0.1) when given no address, and stops on SIGTERM, leaving its port free for
the next start."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from ports import free_port

ROOT = Path(__file__).resolve().parents[2]


def port_is_free(port: int) -> bool:
    """Whether a server could listen on `port` now, as a restart would (Streamlit's
    server sets SO_REUSEADDR too, so the closed connections of this test do not count)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


LOOPBACK = {"0100007F", "00000000000000000000000001000000"}  # 127.0.0.1 and ::1 as /proc/net writes them


def listening_addresses(port: int) -> set[str]:
    """The local addresses (hex, as the kernel lists them) with a socket listening on `port`."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, _, hex_port = local.partition(":")
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                found.add(address)
    return found


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            return answer.status, answer.read().decode(errors="replace")
    except OSError:
        return 0, ""


def test_memlens_run_from_another_folder_serves_the_app_once_ready(tmp_path, demo_dir):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "demo.sqlite").symlink_to(demo_dir / "demo.sqlite")
    port = free_port()
    env = dict(os.environ, MEMLENS_DATA_DIR=str(tmp_path / "data"), PYTHONPATH=str(ROOT))
    log_path = tmp_path / "run.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "dashboard.cli.main", "run", "--server.port", str(port)],  # no address: the default's test
            cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while get(f"http://127.0.0.1:{port}/_stcore/health")[0] != 200:
            assert process.poll() is None, log_path.read_text()
            assert time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.25)
        # By the health answer the start-up has run and said what was ready.
        assert "model ready" in log_path.read_text() and "store ready" in log_path.read_text(), log_path.read_text()
        status, page = get(f"http://127.0.0.1:{port}/?query=pizza&user=sam")
        assert status == 200 and '<div id="root">' in page  # Streamlit's page, which then runs navigation.py
        # Memory text on every page: reachable from this machine only, not from the network.
        assert listening_addresses(port) and listening_addresses(port) <= LOOPBACK, listening_addresses(port)
        # What `make run` sets: Streamlit says this line at start-up only when it collects them.
        assert "Collecting usage statistics" not in log_path.read_text()
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            returned = process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            raise
    assert returned in (0, -signal.SIGTERM), log_path.read_text()
    # The server itself got the signal and stopped: nothing is left holding the port
    # (a restart on the same port failed with "Port ... is not available").
    assert port_is_free(port), log_path.read_text()
