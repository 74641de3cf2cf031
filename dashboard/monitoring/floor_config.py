"""The floor config Calibrate exports (``memlens-floor.json``: calibration.report.floor_choice):
the floor to watch and, from its provenance, the dates of the labels it came from,
which make the monitor's default baseline. Pure."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path


class FloorConfigError(ValueError):
    """The floor config cannot be used; the message names the file and the field."""


@dataclass
class FloorConfig:
    floor: float
    label_range: tuple[datetime, datetime] | None  # (first label, last label), UTC
    store: str | None
    source: str


def _stamp(value: object, path: str, name: str) -> datetime:
    import pandas as pd  # only for a floor config: the command otherwise starts without pandas

    try:
        stamp = pd.Timestamp(str(value))
    except ValueError:
        raise FloorConfigError(f"{path}: field 'date_range.{name}': {value!r} is not an ISO 8601 date-time") from None
    stamp = stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")
    return stamp.to_pydatetime()


def read_floor_config(path: str | Path) -> FloorConfig:
    path = str(path)
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise FloorConfigError(f"{path}: cannot read the file ({exc.strerror or exc})") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise FloorConfigError(f"{path}: not a JSON file ({exc})") from exc
    if not isinstance(data, dict):
        raise FloorConfigError(f"{path}: not a floor config (a JSON object with a 'floor', as Calibrate exports)")
    floor = data.get("floor")
    if isinstance(floor, bool) or not isinstance(floor, (int, float)) or not math.isfinite(floor):
        raise FloorConfigError(f"{path}: field 'floor': {floor!r} is not a number (export the floor from Calibrate as JSON)")
    label_range = None
    dates = data.get("date_range")
    if isinstance(dates, dict) and dates.get("from") and dates.get("to"):
        label_range = (_stamp(dates["from"], path, "from"), _stamp(dates["to"], path, "to"))
    store = data.get("store") if isinstance(data.get("store"), str) else None
    return FloorConfig(floor=float(floor), label_range=label_range, store=store, source=path)
