"""What a store did at write time with each message of a conversation: the write audit.

A relevant memory can be lost before any query: a store that extracts facts with a
model (Mem0's ``infer=True``) may store nothing for a message its prompts do not
count as a fact, or merge it into a memory it already holds. The audit replays
conversations into a fresh store (``connectors.registry.write_audit``), keeps the events the
store reported per message, and counts them:

    events              ADD / UPDATE / DELETE / NONE, as the store reported them
    produced nothing    messages with no ADD or UPDATE: nothing stored came from them
    memories            distinct memory ids added or updated and not deleted since

With a judged set whose relevant ids are message ids (the evidence a question
needs), ``storage_recall`` is the share of evidence messages that left a memory:
by provenance (the message's own ADD or UPDATE, its memory not deleted since), or
else by an embedding neighbour, a stored memory of that user at least as near the
message as Browse's "stored in other words" (dashboard/browse.py ``SAME_FACT_AT``).

The conversations file is JSONL, one message a line: ``message_id``, ``user_id``,
``content``, optional ``role`` (user | assistant, default user) and ``timestamp``
(ISO 8601). Messages are replayed in the file's order. A bad line is named by line
and field and left out. Output holds ids, events and counts; a memory's text only
when the caller asks for it. Pure functions: no Streamlit, no store calls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from connectors.base import ConnectorError, ReplayedMessage, parse_as_of
from connectors.common import inbound
from connectors.common.errors import MemlensError
from connectors.common.lines import LineIssue, echo, parse_line
from dashboard.browse import SAME_FACT_AT
from dashboard.judged import JudgedQuestion

EVENTS = ("ADD", "UPDATE", "DELETE", "NONE")
STORING = ("ADD", "UPDATE")  # the events that leave a memory from the message
ROLES = ("user", "assistant")


class WriteAuditError(MemlensError):
    """The input cannot be audited at all (the file is unreadable, or no line is usable)."""


@dataclass(frozen=True)
class Message:
    message_id: str
    user_id: str
    content: str
    role: str = "user"
    timestamp: str | None = None  # UTC ISO 8601


def read_conversations(path: str | Path) -> tuple[list[Message], list[LineIssue]]:
    """The messages of a conversations file and one issue per unusable line, read a
    line at a time. WriteAuditError when the file is not a regular readable file."""
    path = Path(path)
    if not path.is_file():
        raise WriteAuditError(f"{path}: not a regular file")
    messages: list[Message] = []
    issues: list[LineIssue] = []
    seen: dict[str, int] = {}
    try:
        with path.open(encoding="utf-8", newline="\n") as handle:
            for number, line in enumerate(handle, start=1):
                if line.strip():
                    _message(parse_line(line.lstrip("\ufeff"), number, path.name), number, path.name,
                             messages, issues, seen)
    except OSError as exc:
        raise WriteAuditError(f"{path}: cannot be read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise WriteAuditError(f"{path}: not UTF-8 text (byte {exc.start}): save it as UTF-8 JSONL") from exc
    return messages, issues


def _message(obj: dict[str, Any] | LineIssue, number: int, source: str, messages: list[Message],
             issues: list[LineIssue], seen: dict[str, int]) -> None:
    if isinstance(obj, LineIssue):
        issues.append(obj)
        return

    def bad(name: str, message: str) -> None:
        issues.append(LineIssue(source, number, name, message))

    message_id, user_id, content = obj.get("message_id"), obj.get("user_id"), obj.get("content")
    role, timestamp = obj.get("role", "user"), obj.get("timestamp")
    if not isinstance(message_id, str) or not message_id.strip():
        return bad("message_id", "required, a non-empty string")
    if not isinstance(user_id, str) or not user_id.strip():
        return bad("user_id", "required, a non-empty string (Mem0 stores per user)")
    if not isinstance(content, str) or not content.strip():
        return bad("content", "required, the message text")
    if role not in ROLES:
        return bad("role", f"user or assistant, got {echo(role)}")
    when = None
    if timestamp is not None:
        try:
            when = parse_as_of(timestamp).isoformat() if isinstance(timestamp, str) else None
        except ConnectorError:
            when = None
        if when is None:
            return bad("timestamp", f"an ISO 8601 time, got {echo(timestamp)}")
    if message_id in seen:
        return bad("message_id", f"{echo(message_id)} already used on line {seen[message_id]}")
    seen[message_id] = number
    messages.append(Message(message_id, user_id, content, role, when))


@dataclass(frozen=True)
class Recall:
    evidence: int  # evidence messages (relevant ids of answerable questions found in the conversations)
    by_provenance: int
    by_neighbour: int  # left no memory of their own, but a stored memory is that near
    missing_ids: tuple[str, ...]  # relevant ids that are no message of the conversations

    @property
    def share(self) -> float | None:
        return (self.by_provenance + self.by_neighbour) / self.evidence if self.evidence else None


@dataclass
class ConfigAudit:
    """What one store configuration did with the conversations."""

    name: str
    infer: bool
    replayed: list[ReplayedMessage]
    recall: Recall | None = None

    def alive(self) -> dict[str, str]:
        """Memory id -> the message that last added or updated it, for memories not deleted since."""
        owners: dict[str, str] = {}
        for message in self.replayed:
            for event in message.events:
                if event.event in STORING:
                    owners[event.memory_id] = message.message_id
                elif event.event == "DELETE":
                    owners.pop(event.memory_id, None)
        return owners

    def produced_nothing(self) -> list[str]:
        return [m.message_id for m in self.replayed if not any(e.event in STORING for e in m.events)]

    def counts(self) -> dict[str, int]:
        events = dict.fromkeys(EVENTS, 0)
        for message in self.replayed:
            for event in message.events:
                events[event.event] = events.get(event.event, 0) + 1
        return {"messages": len(self.replayed), "produced_nothing": len(self.produced_nothing()), **events,
                "memories": len(self.alive())}

    def summary(self, include_text: bool = False) -> dict[str, Any]:
        recall = self.recall
        body: dict[str, Any] = {
            "name": self.name,
            "infer": self.infer,
            "counts": self.counts(),
            "produced_nothing": self.produced_nothing(),
            "storage_recall": None if recall is None else {
                "share": recall.share, "evidence": recall.evidence, "by_provenance": recall.by_provenance,
                "by_neighbour": recall.by_neighbour, "missing_ids": list(recall.missing_ids),
            },
        }
        body["messages"] = [
            {"message_id": m.message_id, "user_id": m.user_id,
             "events": [{"event": e.event, "memory_id": e.memory_id, **({"memory": e.text} if include_text else {})}
                        for e in m.events]}
            for m in self.replayed
        ]
        return body


def storage_recall(
    questions: Sequence[JudgedQuestion],
    messages: Sequence[Message],
    audit: ConfigAudit,
    nearest: Callable[[Message], float | None],
) -> Recall:
    """The share of evidence messages that left a memory (see the module docstring).
    ``nearest(message)``: the similarity of the stored memory of the message's user
    nearest to its text by embedding (None: nothing stored for that user)."""
    by_id = {m.message_id: m for m in messages}
    wanted = list(dict.fromkeys(m for q in questions if q.answerable for m in q.relevant))
    evidence = [by_id[m] for m in wanted if m in by_id]
    sources = set(audit.alive().values())
    provenance = [m for m in evidence if m.message_id in sources]
    neighbour = 0
    for message in evidence:
        if message.message_id in sources:
            continue
        similarity = nearest(message)
        if similarity is not None and similarity >= SAME_FACT_AT:
            neighbour += 1
    return Recall(len(evidence), len(provenance), neighbour, tuple(m for m in wanted if m not in by_id))


# ------------------------------------------------------------------ output


def table_lines(audits: Sequence[ConfigAudit], include_text: bool = False) -> list[str]:
    """The counts of each configuration side by side, then each message's events per
    configuration ("-": nothing), then what each left out and its storage recall."""
    names = [a.name for a in audits]
    width = max(len("produced_nothing"), *(len(n) for n in names)) + 2
    counts = [a.counts() for a in audits]
    lines = ["".join([f"{'':<18}", *(f"{n:>{width}}" for n in names)])]
    lines.append("".join([f"{'infer':<18}", *(f"{str(a.infer).lower():>{width}}" for a in audits)]))
    for key in counts[0]:
        lines.append("".join([f"{key:<18}", *(f"{c[key]:>{width}}" for c in counts)]))
    if any(a.recall is not None for a in audits):
        cells = []
        for a in audits:
            r = a.recall
            cells.append("n/a" if r is None or r.share is None else f"{r.share:.4f}")
        lines.append("".join([f"{'storage_recall':<18}", *(f"{c:>{width}}" for c in cells)]))
    lines.append("")
    lines.append("".join([f"{'message':<18}", *(f"{n:>{width}}" for n in names)]))
    for row in zip(*(a.replayed for a in audits), strict=True):
        cells = [" ".join(e.event for e in m.events) or "-" for m in row]
        lines.append("".join([f"{_printable(row[0].message_id):<18}", *(f"{c:>{width}}" for c in cells)]))
        if include_text:
            for audit, message in zip(audits, row, strict=True):
                for event in message.events:
                    lines.append(f"    {audit.name} {event.event} {event.memory_id}: {_printable(event.text or '')}")
    lines.append("")
    for audit in audits:
        nothing = audit.produced_nothing()
        lines.append(f"{audit.name}: {len(nothing)} message(s) produced nothing"
                     + (f": {' '.join(_printable(m) for m in nothing)}" if nothing else ""))
        if audit.recall is not None:
            r = audit.recall
            lines.append(f"{audit.name}: storage recall {r.by_provenance + r.by_neighbour} of {r.evidence} evidence "
                         f"message(s) (by provenance {r.by_provenance}, by embedding neighbour {r.by_neighbour})")
    return lines


def _printable(text: str) -> str:
    """Outside text as the terminal may print it: a control character is escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


inbound.register_reader(
    inbound.Reader(
        "conversations file", read_conversations, (WriteAuditError,), ".jsonl",
        {"message_id": "c1", "user_id": "sam", "text": "I moved to Lisbon."}, qualname=f"{__name__}.read_conversations",
    )
)
