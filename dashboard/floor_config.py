"""The floor config: the one reader of the floor file (``memlens-floor.json``) that the
Calibrate page's download and ``memlens calibrate --floor-config-out`` write
(dashboard/calibration/report.py, ``floor_file``), used by the agent side
(dashboard/runtime.py), the monitor (command and page) alike.

It holds the global floor, the floors per segment (user, tag, store), the score space
they were calibrated in, the dates of the labels behind them (the monitor's default
baseline), the store they came from and, optionally, a rule that reads the whole turn
(``rule``: dashboard/turn_rule.py; a label-free cut is applied with the floor). ``FloorConfig.load`` reads the file through
the inbound boundary (connectors/common/inbound.py: a regular file only, bounded size,
nesting and numbers), so a hostile file is a ``FloorConfigError`` naming the file and
the field, never a hang or a traceback.

Standard library only: the agent side imports it (a test checks it in a fresh
interpreter).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from connectors.common import inbound
from connectors.common.errors import MemlensError
from connectors.common.redaction import shorten
from connectors.common.score_spaces import AS_SENT, DISTANCE_RULES, ScoreSpace
from dashboard.turn_rule import FLOOR, RuleError, TurnRule

SEGMENT_ORDER = ("user", "tag", "store")  # the most specific segment wins
KNOWN_FORMULAS = {AS_SENT, *(rule for rules in DISTANCE_RULES.values() for rule in rules.values())}
APPLIED_AS_IS = (
    "the floor is applied as is, so check it was calibrated on this store's scores, "
    "or export it again from Calibrate with the store opened"
)
# Why the space is unknown, by where the config came from: each note says only what is known.
NO_SPACE_KEY = "the score space is unknown ({source} has no 'score_space': written before memlens recorded it); "
# Calibrate writes null when it could not tell the labels' space; why (no store named,
# several stores, a distance store's unknown settings) is said where it was exported,
# not here, where only the file is known.
NULL_SPACE = "the score space is unknown ({source} names none: Calibrate did not know it when the floor was exported); "
NO_SPACE_IN_CODE = "the score space is unknown (this FloorConfig was made in code without a score_space); "


class FloorConfigError(MemlensError, ValueError):
    """The floor config cannot be used; the message names the file and the field."""


class ScoreSpaceMismatch(FloorConfigError):
    """A floor applied to scores from a space other than the one it was calibrated in."""


def _said(value: object) -> str:
    return shorten(repr(value), 60)  # a 400-digit number is quoted, not printed whole


@dataclass
class FloorConfig:
    """The floor an agent applies and a monitor watches: one global floor, optional
    floors per segment, the score space they were calibrated in (None: unknown), and
    where they came from."""

    floor: float
    score_space: ScoreSpace | None = None
    segments: dict[str, dict[str, float]] = field(default_factory=dict)  # "user" -> {"sam": 0.41}
    label_range: tuple[datetime, datetime] | None = None  # (first label, last label), UTC
    store: str | None = None  # the store (name:hash) the labels came from, when one
    source: str | None = None  # the file it was read from; None when made in code
    # the rule that reads the whole turn (dashboard/turn_rule.py); None: the floor alone.
    # A mapping as the file holds it is read as the file's is.
    rule: TurnRule | None = None
    # how the file said the space: "absent" (no key) or "null"; None when made in code
    _space_in_file: str | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        name = self.source or "FloorConfig"
        floor = inbound.finite_number(self.floor)
        if floor is None:
            raise FloorConfigError(f"{name}: field 'floor': {_said(self.floor)} is not a finite number")
        self.floor = floor
        # the file's reader checks a config built in code too (and copies: the caller's dict is left as it was)
        self.segments = _read_segments(self.segments, name)
        if self.rule is not None and not isinstance(self.rule, TurnRule):
            self.rule = _read_rule(self.rule, name)

    @classmethod
    def load(cls, path: str | Path) -> FloorConfig:
        """The floor JSON Calibrate exports, read through the inbound boundary.
        Raises FloorConfigError naming the file and the field."""
        try:
            content = inbound.read_small(path, "floor config")
        except inbound.InboundError as exc:
            raise FloorConfigError(str(exc)) from None
        return cls.from_bytes(content, str(path))

    @classmethod
    def from_bytes(cls, content: bytes, name: str) -> FloorConfig:
        """The floor JSON from bytes already in hand (a page's upload), named `name` in
        every message; the same checks and size bound as ``load``."""
        try:
            if len(content) > inbound.MAX_CONFIG_BYTES:
                raise inbound.InboundError(f"{name}: the floor config is larger than {inbound.MAX_CONFIG_BYTES:,} bytes; is it the right file?")
            data = inbound.load_json(content.decode("utf-8"), name)
        except inbound.InboundError as exc:
            raise FloorConfigError(str(exc)) from None
        except UnicodeDecodeError as exc:
            raise FloorConfigError(f"{name}: not a JSON file ({exc})") from None
        if not isinstance(data, dict):
            raise FloorConfigError(f"{name}: not a floor config (a JSON object with a 'floor', as Calibrate exports)")
        floor = inbound.finite_number(data.get("floor"))
        if floor is None:
            raise FloorConfigError(
                f"{name}: field 'floor': {_said(data.get('floor'))} is not a finite number "
                "(export the floor from Calibrate, or `memlens calibrate --floor-config-out`)"
            )
        store = data.get("store")
        if store is not None and not isinstance(store, str):
            raise FloorConfigError(f"{name}: field 'store': {_said(store)} is not a string")
        config = cls(
            floor=floor,
            score_space=_read_space(data.get("score_space"), name),
            segments=_read_segments(data.get("segments"), name),
            label_range=_read_dates(data.get("date_range"), name),
            store=store,
            source=name,
            rule=_read_rule(data.get("rule"), name),
        )
        config._space_in_file = "null" if "score_space" in data else "absent"
        return config

    @property
    def rule_name(self) -> str:
        """What the log calls what this config applies: ``floor``, or the rule's kind."""
        return self.rule.kind if self.rule is not None else FLOOR

    @property
    def notes(self) -> list[str]:
        """What an agent's operator should know about this config: an unknown space,
        and why it is unknown."""
        if self.score_space is not None:
            return []
        if self.source is None:
            return [NO_SPACE_IN_CODE + APPLIED_AS_IS]
        said = NULL_SPACE if self._space_in_file == "null" else NO_SPACE_KEY
        return [said.format(source=self.source) + APPLIED_AS_IS]

    def floor_for(self, *, user_id: str | None = None, tag: str | None = None, store: str | None = None) -> tuple[float, str]:
        """The floor for one turn and the segment it came from (``user=sam``, or ``global``)."""
        if not self.segments:  # the common case, asked on every agent turn
            return self.floor, "global"
        for by, value in zip(SEGMENT_ORDER, (user_id, tag, store), strict=True):
            floors = self.segments.get(by)
            if floors and value is not None and value in floors:
                return floors[value], f"{by}={value}"
        return self.floor, "global"

    def check_space(self, space: ScoreSpace | None, *, what: str = "these results") -> None:
        """Refuse scores from another space than the floor's (ScoreSpaceMismatch)."""
        # the message is built only on a refusal: this is asked on every agent turn
        if space is None:
            raise ScoreSpaceMismatch(
                f"the floor {self.floor!r}{self._where()} cannot apply to {what}: their scores are ranks or absent, not a score a floor compares with"
            )
        if self.score_space is not None and (space.store, space.formula) != (self.score_space.store, self.score_space.formula):
            raise ScoreSpaceMismatch(
                f"the floor {self.floor!r}{self._where()} was calibrated in {self.score_space.describe()}; {what} are in "
                f"{space.describe()}. A floor applies only in its own score space: calibrate one on this store's labels"
            )

    def _where(self) -> str:
        return f" from {self.source}" if self.source else ""


def _read_space(value: object, name: str) -> ScoreSpace | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise FloorConfigError(f"{name}: field 'score_space': {_said(value)} is not an object with 'store' and 'formula'")
    store, formula, setting = value.get("store"), value.get("formula"), value.get("setting")
    if not isinstance(store, str) or not store:
        raise FloorConfigError(f"{name}: field 'score_space.store': {_said(store)} is not a store kind")
    if formula not in KNOWN_FORMULAS:
        raise FloorConfigError(f"{name}: field 'score_space.formula': {_said(formula)} is not one of {', '.join(sorted(KNOWN_FORMULAS))}")
    if setting is not None and not isinstance(setting, str):
        raise FloorConfigError(f"{name}: field 'score_space.setting': {_said(setting)} is not a string")
    return ScoreSpace(store, str(formula), setting)


def _read_segments(value: object, name: str) -> dict[str, dict[str, float]]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise FloorConfigError(f"{name}: field 'segments': {_said(value)} is not an object such as {{\"user\": {{\"sam\": 0.41}}}}")
    segments: dict[str, dict[str, float]] = {}
    for by, floors in value.items():
        if by not in SEGMENT_ORDER:
            raise FloorConfigError(f"{name}: field 'segments.{shorten(by, 40)}': segments are by {', '.join(SEGMENT_ORDER)}")
        if not isinstance(floors, dict):
            raise FloorConfigError(f"{name}: field 'segments.{by}': not an object of segment -> floor")
        segments[by] = {}
        for segment, floor in floors.items():
            number = inbound.finite_number(floor)
            if number is None:
                raise FloorConfigError(f"{name}: field 'segments.{by}.{shorten(segment, 40)}': {_said(floor)} is not a finite number")
            segments[by][str(segment)] = number
    return segments


def _read_rule(value: object, name: str) -> TurnRule | None:
    """The file's ``rule`` section (kind, features, coefficients, intercept, cut); the
    other keys it holds (how it was chosen, its held-out figures) are for people."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise FloorConfigError(f"{name}: field 'rule': {_said(value)} is not an object with a 'kind'")
    try:
        return TurnRule(
            kind=value.get("kind"),  # type: ignore[arg-type]  # checked by TurnRule
            features=value.get("features", ()),
            coefficients=value.get("coefficients", ()),
            intercept=value.get("intercept", 0.0),
            cut=value.get("cut"),
        )
    except RuleError as exc:
        raise FloorConfigError(f"{name}: field 'rule.{exc.field}': {shorten(exc.message, 200)}") from None


def _stamp(value: object, name: str, key: str) -> datetime:
    wrong = f"{name}: field 'date_range.{key}': {_said(value)}"
    if not isinstance(value, str):
        raise FloorConfigError(f"{wrong} is not an ISO 8601 date-time")
    try:
        stamp = datetime.fromisoformat(value)  # takes a trailing Z (Python 3.11)
    except ValueError:
        raise FloorConfigError(f"{wrong} is not an ISO 8601 date-time") from None
    stamp = stamp.replace(tzinfo=UTC) if stamp.tzinfo is None else stamp.astimezone(UTC)
    if not inbound.sane_time(stamp):
        raise FloorConfigError(f"{wrong} is outside {inbound.EARLIEST:%Y}-{inbound.LATEST:%Y}")
    return stamp


def _read_dates(value: object, name: str) -> tuple[datetime, datetime] | None:
    """The labels' (first, last) dates; None when the file has none (labels without dates)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise FloorConfigError(f"{name}: field 'date_range': {_said(value)} is not an object with 'from' and 'to'")
    if not value.get("from") or not value.get("to"):
        return None
    return _stamp(value["from"], name, "from"), _stamp(value["to"], name, "to")


def _sample() -> dict[str, Any]:
    return {
        "floor": 0.35,
        "score_space": {"store": "embedded", "formula": AS_SENT, "setting": None},
        "segments": {"user": {"sam": 0.28}},
        "date_range": {"from": "2026-01-01T00:00:00Z", "to": "2026-01-07T00:00:00Z"},
        "store": "embedded",
    }


inbound.register_reader(
    inbound.Reader(
        "floor config", FloorConfig.load, (FloorConfigError,), ".json", _sample(),
        rows=False, qualname=f"{__name__}.FloorConfig.load",
    )
)  # fmt: skip
