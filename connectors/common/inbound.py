"""The one inbound boundary for files memlens reads: logs, traces, floor configs,
label files, judged sets. Pure (standard library only).

- ``regular_file(path, what)``: a path that is not a regular file (a FIFO, a device
  such as /dev/zero, a folder, a socket) is refused before anything opens it, so
  nothing hangs on a pipe or reads an endless device;
- ``read_small(path, what, limit)``: a config-sized file, read whole only when it is
  no larger than ``limit`` (a 5 GB "config" is refused, not read into memory);
- ``load_json(text, where)``: JSON whose numbers Python cannot hold (4,300 digits and
  more) or whose nesting is deeper than ``MAX_NESTING`` is a clear error, not a
  traceback;
- ``load_yaml(text, where)``: a YAML config without aliases (a recursive alias never
  ends; a 600-byte "billion laughs" file expands to gigabytes), nested no deeper than
  ``MAX_NESTING``, safe types only (PyYAML is imported only when a YAML file is read);
- ``finite_number(value)`` and ``sane_time(stamp)``: a number must be finite and fit
  a float; a time must fall between ``EARLIEST`` and ``LATEST`` (year 9999 does not).

Each refusal is an ``InboundError`` naming the file (and the field where there is
one); a command turns it into exit status 2 and a page into a message.

Every reader registers itself in ``READERS`` (``register_reader``), where it is
defined; the hostile-input suite runs one corpus against each.
"""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from connectors.common.errors import MemlensError

MAX_CONFIG_BYTES = 1 << 20  # a floor config or judge config is a few hundred bytes
MAX_NESTING = 100  # deeper JSON is not something memlens writes or reads
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(2200, 1, 1, tzinfo=UTC)

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class InboundError(MemlensError, ValueError):
    """A file memlens cannot use; the message names the file and, where there is
    one, the field."""


def regular_file(path: str | Path, what: str = "file") -> Path:
    """``path`` when it names a regular file (after symlinks); else InboundError
    saying what it is. Nothing is opened."""
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise InboundError(f"{path}: no such file (cannot read the file)") from None
    except OSError as exc:
        raise InboundError(f"{path}: cannot read the {what} ({exc.strerror or exc})") from None
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
        raise InboundError(f"{path}: is {kind}, not a regular file; memlens reads a {what} only from a regular file")
    return path


def read_small(path: str | Path, what: str = "file", limit: int = MAX_CONFIG_BYTES) -> bytes:
    """The bytes of a small regular file; a larger one is refused unread."""
    path = regular_file(path, what)
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise InboundError(f"{path}: cannot read the {what} ({exc.strerror or exc})") from None
    if len(data) > limit:
        raise InboundError(f"{path}: the {what} is larger than {limit:,} bytes; is it the right file?")
    return data


def nesting_depth(text: str) -> int:
    """How deep the brackets of JSON text go (brackets inside strings ignored): a
    linear scan, so 100,000 brackets are measured, not recursed into."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


class _NotANumber(ValueError):
    pass


def _no_constant(name: str) -> Any:
    raise _NotANumber(name)  # NaN, Infinity, -Infinity: Python's extension, not JSON


def load_json(text: str, where: str) -> Any:
    """Decoded JSON, or InboundError naming ``where`` (the file) and what is wrong."""
    if nesting_depth(text) > MAX_NESTING:
        raise InboundError(f"{where}: JSON nested deeper than {MAX_NESTING} levels; memlens does not read it")
    try:
        return json.loads(text, parse_constant=_no_constant)
    except _NotANumber as exc:
        raise InboundError(f"{where}: {exc} is not a number JSON allows; write a finite number") from None
    except json.JSONDecodeError as exc:
        raise InboundError(f"{where}, line {exc.lineno}: not valid JSON ({exc.msg}, column {exc.colno})") from None
    except ValueError as exc:  # an integer of 4,300 digits or more
        raise InboundError(f"{where}: not usable JSON: {exc}") from None
    except RecursionError:
        raise InboundError(f"{where}: JSON nested too deeply to read") from None


def load_toml(text: str, where: str) -> dict[str, Any]:
    """Decoded TOML, or InboundError naming ``where``: tomllib raises ValueError for
    an integer of 4,300 digits and RecursionError for deep arrays, besides its own."""
    import tomllib

    if nesting_depth(text.replace("'", '"')) > MAX_NESTING:
        raise InboundError(f"{where}: TOML nested deeper than {MAX_NESTING} levels; memlens does not read it")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InboundError(f"{where}: not valid TOML: {exc}") from None
    except ValueError as exc:
        raise InboundError(f"{where}: not usable TOML: {exc}") from None
    except RecursionError:
        raise InboundError(f"{where}: TOML nested too deeply to read") from None


def load_yaml(text: str, where: str) -> Any:
    """Decoded YAML (safe types only), or InboundError naming ``where`` and the line:
    an alias (``*name``) is refused where it stands, before anything is expanded, and
    so is nesting deeper than ``MAX_NESTING`` and a number Python cannot hold."""
    import yaml

    class BoundedLoader(yaml.SafeLoader):
        depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                raise InboundError(
                    f"{where}, line {event.start_mark.line + 1}: a YAML alias (*{event.anchor}); memlens reads configs "
                    "without anchors and aliases: write the value out where it is used"
                )
            self.depth += 1
            if self.depth > MAX_NESTING:
                raise InboundError(f"{where}: YAML nested deeper than {MAX_NESTING} levels; memlens does not read it")
            try:
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

    loader = BoundedLoader(text)
    try:
        return loader.get_single_data()
    except InboundError:
        raise
    except yaml.YAMLError as exc:
        raise InboundError(f"{where}: not valid YAML ({' '.join(str(exc).split())})") from None
    except ValueError as exc:  # an integer of 4,300 digits or more
        raise InboundError(f"{where}: not usable YAML: {exc}") from None
    except RecursionError:
        raise InboundError(f"{where}: YAML nested too deeply to read") from None
    finally:
        loader.dispose()


def finite_number(value: Any) -> float | None:
    """``value`` as a finite float, or None when it is not a number (a bool, text),
    infinite, NaN or too large for a float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def sane_time(stamp: datetime) -> bool:
    """True for a time-zone-aware time from ``EARLIEST`` up to ``LATEST``."""
    return EARLIEST <= stamp < LATEST


# ------------------------------------------------------------------ the registry of readers


@dataclass(frozen=True)
class Reader:
    """A file reader, registered where it is defined, so the hostile-input suite
    (tests/test_hostile_inputs.py) meets every one: a new reader that is not
    registered fails that suite's completeness test."""

    name: str
    read: Callable[[str], Any]  # path -> what the reader returns
    errors: tuple[type[Exception], ...]  # its clear refusal (the message names the file)
    suffix: str  # the file name ending it reads: ".jsonl", ".json", ".toml", ".parquet"
    sample: dict[str, Any]  # one good row (for a file of rows) or the whole document
    rows: bool = True  # a file of rows (one per line, or Parquet rows), else one document
    qualname: str = ""  # module.function of the reader, for the completeness test


READERS: dict[str, Reader] = {}


def register_reader(reader: Reader) -> None:
    READERS[reader.name] = reader
