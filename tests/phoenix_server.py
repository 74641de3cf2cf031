"""A throwaway Arize Phoenix server for the tests: `phoenix serve` on a free loopback
port with a SQLite database in a temporary directory.

The server (the `arize-phoenix` package, about 860 MB with pins of its own) lives in
a virtual environment of its own (MEMLENS_PHOENIX_VENV, which the Makefile sets to one
per machine and version under ~/.cache/memlens), which `make phoenix-server` builds (and
`make test` depends on), so its pins cannot move the project's packages; the project itself uses only the light client. Phoenix is
told not to fetch anything from the internet (PHOENIX_ALLOW_EXTERNAL_RESOURCES) and
not to send telemetry.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import httpx
from ports import free_port

ROOT = Path(__file__).resolve().parents[1]
PHOENIX = Path(os.environ.get("MEMLENS_PHOENIX_VENV") or ROOT / ".venv-phoenix") / "bin" / "phoenix"


class PhoenixServer:
    def __init__(self) -> None:
        if not PHOENIX.exists():
            raise RuntimeError(f"{PHOENIX} not found: `make phoenix-server` installs the Phoenix server (MEMLENS_PHOENIX_VENV)")
        self.root = Path(tempfile.mkdtemp(prefix="memlens-phoenix-"))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 180.0) -> PhoenixServer:
        environment = {
            **os.environ,
            "PHOENIX_WORKING_DIR": str(self.root),
            "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_PORT": str(self.port),
            "PHOENIX_GRPC_PORT": str(free_port()),
            "PHOENIX_TELEMETRY_ENABLED": "false",
            "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
        }
        log = (self.root / "server.log").open("w")
        self.process = subprocess.Popen(
            [str(PHOENIX), "serve"], cwd=self.root, env=environment, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"phoenix serve exited {self.process.returncode}: {self.log()[-3000:]}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"phoenix serve did not answer within {timeout:.0f} s: {self.log()[-3000:]}")

    def log(self) -> str:
        path = self.root / "server.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def graphql(self, query: str, variables: dict | None = None) -> dict:
        """What Phoenix's own pages ask its GraphQL API for."""
        answer = httpx.post(f"{self.url}/graphql", json={"query": query, "variables": variables or {}}, timeout=30)
        answer.raise_for_status()
        body = answer.json()
        if body.get("errors"):
            raise RuntimeError(body["errors"])
        return body["data"]

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        shutil.rmtree(self.root, ignore_errors=True)
