"""The floor config Calibrate exports (``memlens-floor.json``: calibration.report.floor_choice):
the floor to watch and, from its provenance, the dates of the labels it came from,
which make the monitor's default baseline. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from connectors.common import inbound
from connectors.common.errors import MemlensError
from connectors.common.redaction import shorten


class FloorConfigError(MemlensError, ValueError):
    """The floor config cannot be used; the message names the file and the field."""


@dataclass
class FloorConfig:
    floor: float
    label_range: tuple[datetime, datetime] | None  # (first label, last label), UTC
    store: str | None
    source: str


def _stamp(value: object, path: str, name: str) -> datetime:
    import pandas as pd  # only for a floor config: the command otherwise starts without pandas

    wrong = f"{path}: field 'date_range.{name}': {shorten(repr(value), 60)}"
    try:
        stamp = pd.Timestamp(str(value))
    except (ValueError, OverflowError):  # pandas' OutOfBoundsDatetime is a ValueError
        raise FloorConfigError(f"{wrong} is not an ISO 8601 date-time") from None
    if pd.isna(stamp):  # "NaT", "nat": pandas' missing time, not a date
        raise FloorConfigError(f"{wrong} is not an ISO 8601 date-time")
    stamp = stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")
    when = stamp.to_pydatetime()
    if not inbound.sane_time(when):
        raise FloorConfigError(f"{wrong} is outside {inbound.EARLIEST:%Y}-{inbound.LATEST:%Y}")
    return when


def read_floor_config(path: str | Path) -> FloorConfig:
    """The floor config at `path`, read through the inbound file boundary (a regular
    file of config size, JSON of sane depth and numbers), or FloorConfigError."""
    path = str(path)
    try:
        data = inbound.load_json(inbound.read_small(path, "floor config").decode("utf-8"), path)
    except inbound.InboundError as exc:
        raise FloorConfigError(str(exc)) from None
    except UnicodeDecodeError as exc:
        raise FloorConfigError(f"{path}: not a JSON file ({exc})") from None
    if not isinstance(data, dict):
        raise FloorConfigError(f"{path}: not a floor config (a JSON object with a 'floor', as Calibrate exports)")
    floor = inbound.finite_number(data.get("floor"))
    if floor is None:
        raise FloorConfigError(
            f"{path}: field 'floor': {shorten(repr(data.get('floor')), 60)} is not a finite number "
            "(export the floor from Calibrate as JSON)"
        )
    label_range = None
    dates = data.get("date_range")
    if isinstance(dates, dict) and dates.get("from") and dates.get("to"):
        label_range = (_stamp(dates["from"], path, "from"), _stamp(dates["to"], path, "to"))
    store = data.get("store") if isinstance(data.get("store"), str) else None
    return FloorConfig(floor=float(floor), label_range=label_range, store=store, source=path)


inbound.register_reader(
    inbound.Reader(
        "floor config", read_floor_config, (FloorConfigError,), ".json",
        {"floor": 0.35, "date_range": {"from": "2026-01-01T00:00:00Z", "to": "2026-01-07T00:00:00Z"}, "store": "embedded"},
        rows=False, qualname=f"{__name__}.read_floor_config",
    )
)
