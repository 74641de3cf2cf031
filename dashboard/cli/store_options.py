"""The store options the commands share (--db, --store, --config) and the store they
open: one place, so `memlens eval`, `judge`, `judge align`, `rank` and `monitor --judge`
read a store's settings alike and a saved run's store (`misses`, `runs resume`) is
opened as the run was.

    add_store_options(parser)      --db FILE, --store NAME (default embedded), --config FILE
    open_store(args)               the store those options name, and its fingerprint
    store_config(args)             its settings: --config, then --db (and eval's --weights, --as-of)
    open_configured(name, config)  a store by name and settings, its secrets from the environment
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from connectors.common import inbound
from dashboard.cli.errors import CommandError

if TYPE_CHECKING:
    from connectors.base import MemoryStore

EMBEDDED_DB_HELP = "the embedded store's SQLite file"


def add_store_options(parser: Any, *, db_help: str = EMBEDDED_DB_HELP) -> None:
    """--db, --store and --config on `parser` (a parser or an argument group); `db_help`
    says what the command reads from the embedded store."""
    parser.add_argument("--db", metavar="FILE", help=db_help)
    parser.add_argument("--store", default="embedded", help="store name in the registry (default embedded)")
    parser.add_argument("--config", metavar="FILE", help="the store's settings as a JSON object; secrets come from the environment")


def read_store_config(path: str) -> dict[str, Any]:
    """A store's settings file (--config): a JSON object read through the inbound
    boundary (a regular file of config size, JSON of sane depth and numbers), or
    CommandError naming the file."""
    try:
        loaded = inbound.load_json(inbound.read_small(path, "store config").decode("utf-8"), path)
    except inbound.InboundError as exc:
        raise CommandError(f"--config {exc}") from None
    except UnicodeDecodeError as exc:
        raise CommandError(f"--config {path}: not UTF-8 text ({exc})") from None
    if not isinstance(loaded, dict):
        raise CommandError(f"--config {path}: expected a JSON object of settings")
    return loaded


inbound.register_reader(
    inbound.Reader(
        "store config", read_store_config, (CommandError,), ".json", {"db_path": "memories.sqlite", "weights": "semantic=1"},
        rows=False, qualname=f"{__name__}.read_store_config",
    )
)  # fmt: skip


def store_config(args: argparse.Namespace, *, weights: str | None = None, as_of: str | None = None) -> dict[str, Any]:
    """The store's settings from --config, --db and, for `memlens eval`, `weights` and
    `as_of` (its --weights and --as-of; later ones win). The other commands rank at
    the store's own defaults."""
    config: dict[str, Any] = {}
    if args.config:
        config.update(read_store_config(args.config))
    if args.db:
        config["db_path"] = str(Path(args.db).resolve())
    if weights:
        config["weights"] = weights
    if as_of:
        config["as_of"] = as_of_setting(args.store, as_of)
    if args.store == "embedded" and not config.get("db_path"):
        raise CommandError("--db FILE is required for the embedded store (build one with `memlens import`)")
    return config


def as_of_setting(store: str, text: str) -> str:
    """--as-of as the store setting a run keeps (UTC ISO 8601); CommandError naming the
    flag when the time is unreadable or the store keeps its own clock."""
    from connectors.base import InvalidRequest, parse_as_of
    from connectors.registry import REGISTRY

    spec = REGISTRY.get(store)
    if spec is not None and not spec.clock:
        raise CommandError(f"--as-of: the {store} store computes recency itself; only the embedded store takes a clock")
    try:
        return parse_as_of(text).isoformat()
    except InvalidRequest as exc:
        raise CommandError(str(exc).replace("as_of:", "--as-of", 1)) from None


def with_secrets(name: str, config: dict[str, Any]) -> dict[str, Any]:
    """Secret fields filled from their environment variables (never from a flag),
    each only when the settings send it to the host it was configured for: a
    --config file naming another base_url does not get the environment's key."""
    from connectors.registry import REGISTRY, with_configured_secrets

    full = with_configured_secrets(name, config, os.environ)
    spec = REGISTRY.get(name)
    for field in spec.fields if spec else ():
        if field.kind == "secret" and field.env and os.environ.get(field.env) and not full.get(field.name):
            print(
                f"memlens: {field.env} is not sent with these settings: it goes only to the {field.bound_to} "
                "it was configured with",
                file=sys.stderr,
            )
    return full


def open_configured(name: str, config: dict[str, Any]) -> MemoryStore:
    """The store `name` opened with `config`, its secrets from the environment."""
    from connectors.registry import create_store

    return create_store(name, with_secrets(name, config))


def open_store(args: argparse.Namespace) -> tuple[MemoryStore, str]:
    """The store --db, --store and --config name, and its fingerprint (what a label or
    a log names it by)."""
    from connectors.registry import fingerprint

    config = store_config(args)
    return open_configured(args.store, config), fingerprint(args.store, config)
