"""A throwaway PostgreSQL server for the tests: initdb + pg_ctl on a temporary
directory, listening on a free loopback port, trust authentication.

PostgreSQL refuses to run as root, so as root the server runs as the `postgres`
user (`runuser -u postgres`), on a directory that user owns. `make system-deps`
installs postgresql-15, which creates that user.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from ports import free_port


def pg_bin_dir() -> Path:
    configured = os.environ.get("MEMLENS_PG_BIN")
    candidates = [configured] if configured else sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for candidate in candidates:
        if candidate and (Path(candidate) / "initdb").exists():
            return Path(candidate)
    raise RuntimeError(
        "PostgreSQL server binaries not found (looked in /usr/lib/postgresql/*/bin); "
        "`make system-deps` installs postgresql-15"
    )


class PostgresServer:
    def __init__(self) -> None:
        self.bin = pg_bin_dir()
        self.root = Path(tempfile.mkdtemp(prefix="memlens-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self.as_root = os.geteuid() == 0
        if self.as_root:
            shutil.chown(self.root, "postgres", "postgres")

    def _run(self, *command: str) -> subprocess.CompletedProcess:
        prefix = ["runuser", "-u", "postgres", "--"] if self.as_root else []
        return subprocess.run(
            [*prefix, *command], capture_output=True, text=True, timeout=120, cwd=self.root, check=False
        )

    def start(self) -> PostgresServer:
        done = self._run(
            str(self.bin / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"
        )
        if done.returncode:
            raise RuntimeError(f"initdb failed: {done.stderr[-2000:]}")
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root} -c max_connections=50"
        done = self._run(
            str(self.bin / "pg_ctl"), "-D", str(self.data), "-o", options, "-l", str(self.root / "server.log"), "-w", "start"
        )
        if done.returncode:
            log = (self.root / "server.log").read_text(errors="replace") if (self.root / "server.log").exists() else ""
            raise RuntimeError(f"pg_ctl start failed: {done.stderr[-2000:]} {log[-2000:]}")
        return self

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A fresh, empty database; its URL."""
        import psycopg

        name = "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def processes(self) -> list[int]:
        """The postmaster's pid and its children's (the backends serving connections)."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        children = Path(f"/proc/{postmaster}/task/{postmaster}/children").read_text().split()
        return [postmaster, *map(int, children)]

    def freeze(self) -> None:
        """SIGSTOP the server and every backend: it answers nothing, as behind a
        network partition, while the kernel still accepts connections."""
        for pid in self.processes():
            os.kill(pid, signal.SIGSTOP)

    def thaw(self) -> None:
        for pid in self.processes():
            os.kill(pid, signal.SIGCONT)

    def stop(self) -> None:
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")
        for _ in range(50):
            if not (self.data / "postmaster.pid").exists():
                break
            time.sleep(0.1)
        shutil.rmtree(self.root, ignore_errors=True)
