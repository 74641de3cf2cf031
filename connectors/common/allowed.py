"""What only the operator decides: which code a store may import, which server paths
its settings may name.

A visitor who reaches *Store settings* types text. Text that names code to import
(a LangGraph ``module:function``) or a file or folder on the server is taken only
when the operator allowed it, in the environment (or a root-level key of
``.streamlit/secrets.toml``, which Streamlit copies into the environment):

- importable targets: the configured value itself plus a comma-separated allowlist
  (``allowed_values``);
- server paths: anything under the data directory (``MEMLENS_DATA_DIR``), under a
  path an operator configured for a store setting (``MEMLENS_EMBEDDED_DB``,
  ``MEMLENS_QDRANT_PATH``, ...), or under one of ``MEMLENS_ALLOWED_PATHS``
  (``allowed_path``, the one function that decides).

A secret the operator configured goes only where the operator configured it: to
the same ``destination`` (scheme, host and port) as the setting it is bound to
(connectors/registry.py applies the rule to each store's settings).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from connectors.base import InvalidRequest
from connectors.common.paths import DATA_DIR_ENV, data_dir

ALLOWED_PATHS_ENV = "MEMLENS_ALLOWED_PATHS"


def allowed_values(environ: Mapping[str, str], single_env: str, list_env: str) -> tuple[str, ...]:
    """The operator's values, in order: ``single_env``, then each comma-separated
    entry of ``list_env`` (blanks dropped, duplicates once)."""
    names = [environ.get(single_env, ""), *environ.get(list_env, "").split(",")]
    return tuple(dict.fromkeys(name.strip() for name in names if name.strip()))


def path_roots(environ: Mapping[str, str], configured_envs: Iterable[str] = ()) -> tuple[Path, ...]:
    """The directories (or single files) a visitor's path setting may fall under:
    the data directory, each configured path in ``configured_envs``, and each entry
    of ``MEMLENS_ALLOWED_PATHS`` (separated by ``os.pathsep`` or commas)."""
    data = Path(environ[DATA_DIR_ENV]) if environ.get(DATA_DIR_ENV) else data_dir()
    roots = [data]
    roots += [Path(environ[name]) for name in configured_envs if environ.get(name, "").strip()]
    extra = environ.get(ALLOWED_PATHS_ENV, "").replace(",", os.pathsep).split(os.pathsep)
    roots += [Path(entry.strip()) for entry in extra if entry.strip()]
    return tuple(dict.fromkeys(_resolved(root) for root in roots))


def _resolved(path: Path) -> Path:
    # resolve() follows symlinks, so a link inside the data directory that points
    # out of it is judged by where it points.
    return path.expanduser().resolve()


def allowed_path(value: str, setting: str, roots: Iterable[Path]) -> Path:
    """``value`` resolved, when it lies under one of ``roots``; else InvalidRequest
    naming the setting (the server's directories are not listed to the visitor)."""
    path = _resolved(Path(value.strip()))
    for root in roots:
        if path == root or path.is_relative_to(root):
            return path
    raise InvalidRequest(
        f"setting {setting} = {value[:200]!r}: this server opens store files only under the directories its "
        f"operator allowed (the data directory {DATA_DIR_ENV}, the store paths configured in the environment, "
        f"and {ALLOWED_PATHS_ENV})"
    )


def destination(value: Any) -> str:
    """Where a setting points: ``scheme://host:port`` for a URL (path ignored, so a
    key configured for a host works on any of its routes), else the stripped text."""
    text = str(value or "").strip()
    try:
        parts = urlsplit(text)
        host, port = parts.hostname, parts.port
    except ValueError:  # an unparsable port: compare the text as it is
        return text
    if parts.scheme and host:
        port = port or {"http": 80, "https": 443}.get(parts.scheme.lower())
        return f"{parts.scheme.lower()}://{host.lower()}:{port}"
    return text
