"""Where memlens keeps its own files (the demo store, labels, runs, the read log)."""

from __future__ import annotations

import os
from pathlib import Path

DATA_DIR_ENV = "MEMLENS_DATA_DIR"


def data_dir() -> Path:
    """$MEMLENS_DATA_DIR, or ~/.memlens when it is not set."""
    return Path(os.environ.get(DATA_DIR_ENV) or Path.home() / ".memlens")
