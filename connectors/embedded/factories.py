"""The registry's factories for the embedded store ("connectors.embedded.factories:open_store"):
a file a user names, checked to be a memlens store first, or the bundled demo store."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from connectors.base import StoreUnavailable, parse_as_of
from connectors.common.paths import data_dir
from connectors.embedded.files import check_is_store, writable
from connectors.embedded.store import DEFAULT_HALF_LIFE_HOURS, EmbeddedStore

DEMO_DEFAULT_USER = "sam"
DEMO_MEMORIES = Path(__file__).resolve().parents[2] / "demo_data" / "memories.jsonl"


def open_store(
    db_path: str | None = None,
    weights: str | dict | None = None,
    half_life_hours: float = DEFAULT_HALF_LIFE_HOURS,
    model: str | None = None,
    count_usage: bool = False,
    progress: Callable[[int, int], None] | None = None,
    as_of: str | None = None,
) -> EmbeddedStore:
    """The registry's factory: a given SQLite file, or the demo store when none.

    ``as_of`` (ISO 8601) is the clock, for evaluating old data (a benchmark, last
    month's log): recency is computed at it and memories created after it are not
    returned (connectors/embedded/clock.py); empty or None is now.

    A given file must already be a memlens store (``memlens import`` makes one):
    it is looked at read-only first, so a SQLite database of someone else's gets
    no memlens tables and is not switched to WAL."""
    options: dict[str, Any] = dict(weights=weights, half_life_hours=half_life_hours, model=model, count_usage=count_usage)
    if as_of:
        options["as_of"] = parse_as_of(as_of)
    if db_path:
        if not Path(db_path).exists():
            raise StoreUnavailable(f"No embedded store file at {db_path}")
        check_is_store(Path(db_path))
        return EmbeddedStore(db_path, **options)
    return open_demo_store(progress=progress, **options)


def open_demo_store(
    directory: str | Path | None = None,
    *,
    progress: Callable[[int, int], None] | None = None,
    **options: Any,
) -> EmbeddedStore:
    """The bundled demo memories in `<data dir>/demo.sqlite`, imported on first
    open and again only when demo_data/memories.jsonl changes. In a data directory
    the server cannot write, a demo store already there is opened read-only."""
    folder = Path(directory or data_dir())
    path = folder / "demo.sqlite"
    if not writable(folder):
        return _read_only_demo(path, options)
    store = EmbeddedStore(path, **options)
    try:
        source = DEMO_MEMORIES.read_bytes()
    except OSError as exc:
        raise StoreUnavailable(f"The demo memories are missing: {DEMO_MEMORIES} ({exc})") from exc
    digest = hashlib.sha256(source).hexdigest()
    if store.meta("demo_source") != digest:
        report = store.import_jsonl(DEMO_MEMORIES, progress=progress)
        store.delete_except(report.ids)  # a memory removed from the file leaves the demo
        # A broken demo line must not stop the demo: the rest is imported and the
        # problem is kept for the page to show with every result.
        store.set_meta("demo_import_issues", report.summary() if report.issues else "")
        store.set_meta("demo_source", digest)
        store.set_meta("default_user", DEMO_DEFAULT_USER)
    return store


def _read_only_demo(path: Path, options: dict[str, Any]) -> EmbeddedStore:
    from connectors.common.paths import DATA_DIR_ENV

    if not path.exists():
        raise StoreUnavailable(
            f"The data directory {path.parent} cannot be written and holds no demo store: set {DATA_DIR_ENV} "
            "to a folder this server can write, or choose another store"
        )
    options = {**options, "count_usage": False}  # nothing may be written
    return EmbeddedStore(path, read_only=True, **options)
