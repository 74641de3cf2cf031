"""Arize Phoenix both ways: retriever spans in as a retrieval log, labels out as
document annotations. Pure (no streamlit); the light ``arize-phoenix-client`` package
(the ``memlens[phoenix]`` extra) is imported only here, only when used.

In: every retriever span (``span_kind == 'RETRIEVER'``) of a project whose start
lies in [start, end) is a turn, ``message_id`` = its span id, as memlens reads the same
spans from an OTLP file (dashboard/logs/otlp.py); each of its
``retrieval.documents`` is a row (``memory_id`` = ``document.id``, ``rank`` = its
position + 1, ``score`` = ``document.score``); a span with no documents is an empty
turn. The rows are written as a JSONL retrieval log (docs/formats.md), so a labelling
session, a run source or ``memlens monitor`` reads them like any log. Ids and scores
only: no document text and no query.

Out: labels of pairs that are documents of the project's spans, as document
annotations named ``relevance``: label ``relevant`` / ``not_relevant``, score 1 / 0
(Phoenix's precision and nDCG read the score), at the document's position in its
span, the memory id and who labelled in the metadata. Phoenix keeps one annotation
per (name, span, position): people's labels of a document make it (annotator kind
HUMAN, their majority), else judge labels (LLM), and a re-run replaces it, never
adds one. A judge's reason is not sent (it may quote the memory); its grade is.
"""

from __future__ import annotations

import json
import numbers
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from connectors.base import ConnectorError
from connectors.common.errors import MemlensError
from connectors.common.inbound import finite_number
from connectors.common.redaction import redact_text, remember_secrets, shorten, terminal_line

ANNOTATION = "relevance"
INSTALL_HINT = "pip install 'memlens[phoenix]'"
SPAN_CHUNK = 200  # span ids per look-up query
READ_SECONDS = 30.0  # per read, for a request that sets none (Phoenix's own default)
DEADLINE_SECONDS = 300.0  # per request in all: a server dripping bytes cannot hold a pull


class PhoenixError(MemlensError):
    """Phoenix could not be reached or refused; the text never holds the API key."""


@dataclass
class Pulled:
    turns: int
    empty_turns: int
    rows: int
    no_id: int = 0  # documents written without an id: bad rows the log's reader names


@dataclass
class Pushed:
    human: int = 0
    llm: int = 0
    spans: int = 0
    not_found: list[tuple[str, str]] = field(default_factory=list)  # (message_id, memory_id) not a document of the project


def client(url: str, api_key: str | None = None, *, deadline: float = DEADLINE_SECONDS) -> Any:
    """Phoenix's client, sending through the outbound boundary (connectors/http/
    outbound.py): ``deadline`` seconds in all per request, redirects only within the
    server, the key never in a message. A key holding a control character is refused."""
    from connectors.http.outbound import check_credential, library_client, public_url

    try:
        from phoenix.client import Client
    except ImportError:
        raise PhoenixError(f"Phoenix needs its client: {INSTALL_HINT}") from None
    try:
        check_credential("$PHOENIX_API_KEY", api_key)
    except ConnectorError as exc:
        raise PhoenixError(str(exc)) from None
    # Phoenix sends no headers of its own with a given client: the key goes here
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    remember_secrets([api_key])
    # a span query is answered multipart (one JSON part a query) or JSON: a 200 page of
    # anything else (a sign-in page in front of Phoenix) is refused, not read as no spans
    http = library_client(
        url, what=f"Phoenix at {public_url(url)}", timeout=READ_SECONDS, deadline=deadline, headers=headers, secrets=[api_key],
        content_types=("multipart/mixed", "application/json"),
    )
    return Client(http_client=http)


def _call(what: str, secrets: list[str | None], fn: Any, *args: Any, **kwargs: Any) -> Any:
    """One request to Phoenix, its failure as a PhoenixError, redacted and on one
    terminal-safe line."""
    try:
        return fn(*args, **kwargs)
    except ConnectorError as exc:  # the outbound boundary's own words: the host, never a key
        raise PhoenixError(terminal_line(f"Phoenix {what}: {redact_text(str(exc), secrets)}")) from None
    except Exception as exc:
        response = getattr(exc, "response", None)  # httpx.HTTPStatusError: Phoenix refused
        if response is not None and hasattr(response, "status_code"):
            said = shorten(redact_text(response.text, secrets), 300)
            raise PhoenixError(
                terminal_line(f"Phoenix {what}: HTTP {response.status_code} to {response.request.method} {response.request.url.path}: {said}")
            ) from None
        raise PhoenixError(terminal_line(f"Phoenix {what}: {type(exc).__name__}: {redact_text(str(exc), secrets)}")) from None


# ------------------------------------------------------------------ in


def read_spans(
    phoenix: Any, project: str, *, start: datetime | None = None, end: datetime | None = None, limit: int = 100_000, secrets: list[str | None] | None = None
) -> list[dict[str, Any]]:
    """The log rows of the project's retriever spans, in span start order, then rank."""
    from phoenix.client.types.spans import SpanQuery

    secrets = secrets or []
    retrievers = SpanQuery().where("span_kind == 'RETRIEVER'")
    spans = _call(
        "spans",
        secrets,
        phoenix.spans.get_spans_dataframe,
        query=retrievers.select("start_time"),
        project_identifier=project,
        start_time=start,
        end_time=end,
        limit=limit,
        timeout=READ_SECONDS,  # the client's own default is 5 s a read: memlens's limits are the ones it names
    )
    if len(spans) >= limit:
        # the two queries could then each keep a different part of the range, and a
        # span cut from the second would read as an empty turn: refuse instead
        raise PhoenixError(f"{limit:,} retriever spans or more in the range: narrow --from/--to, or raise --limit")
    if not len(spans):
        return []
    _check_columns(spans, ("start_time",), "spans", levels=1)
    started_at = [(span_id, _start(started, span_id)) for span_id, started in zip(spans.index, spans["start_time"], strict=True)]
    documents = _call(
        "documents",
        secrets,
        phoenix.spans.get_spans_dataframe,
        query=retrievers.explode("retrieval.documents", memory_id="document.id", score="document.score"),
        project_identifier=project,
        start_time=start,
        end_time=end,
        limit=limit,
        timeout=READ_SECONDS,
    )
    by_span: dict[str, list[tuple[int, Any, Any]]] = {}
    if len(documents):
        _check_columns(documents, ("memory_id", "score"), "documents", levels=2)
        for (span_id, position), memory_id, score in zip(documents.index, documents["memory_id"], documents["score"], strict=True):
            by_span.setdefault(str(span_id), []).append((_position(position, span_id), memory_id, score))
    store = f"phoenix:{project}"
    rows: list[dict[str, Any]] = []
    for span_id, stamp in sorted(started_at, key=lambda pair: (pair[1], str(pair[0]))):
        found = sorted(by_span.get(str(span_id), []), key=lambda item: item[0])
        if not found:  # the store returned nothing: an empty turn
            rows.append({"message_id": str(span_id), "timestamp": stamp, "store": store})
            continue
        for position, memory_id, score in found:
            # a document without an id (None, NaN, "") has no memory: written without
            # one, a bad row the log's reader names, never the memory "nan"
            row: dict[str, Any] = {"message_id": str(span_id), "memory_id": _memory_id(memory_id)}
            row["rank"] = position + 1
            row["score"] = _score(score)
            row.update(timestamp=stamp, store=store)
            rows.append(row)
    return rows


# The shape of Phoenix's answers, checked once where they are read: a server of
# another version (or something else answering) is one line and exit 2.


def _check_columns(frame: Any, columns: tuple[str, ...], what: str, *, levels: int) -> None:
    missing = [column for column in columns if column not in frame.columns]
    if missing or frame.index.nlevels != levels:
        given = ", ".join(terminal_line(str(c)) for c in list(frame.columns)[:10]) or "none"
        raise PhoenixError(
            f"Phoenix {what}: the answer is not the span table memlens reads (expected columns {', '.join(columns)} "
            f"indexed by {'span id and document position' if levels == 2 else 'span id'}; got columns {given}): "
            "is the URL a Phoenix server?"
        )


def _position(value: Any, span_id: Any) -> int:
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and 0 <= int(value) < 1_000_000:
        return int(value)
    raise PhoenixError(f"Phoenix documents: span {terminal_line(str(span_id))} has document position {terminal_line(repr(value))[:60]}, not a position")


def _start(value: Any, span_id: Any) -> str:
    """The span's start as ISO text in UTC, or PhoenixError naming the span."""
    from connectors.common.inbound import sane_time

    stamp = value.to_pydatetime() if hasattr(value, "to_pydatetime") else value
    if not isinstance(stamp, datetime) or stamp.tzinfo is None or not sane_time(stamp):
        raise PhoenixError(
            f"Phoenix spans: span {terminal_line(str(span_id))} has start_time {terminal_line(repr(value))[:60]}, not a time memlens reads"
        )
    return stamp.isoformat().replace("+00:00", "Z")


def _memory_id(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and value != value) or str(value).strip() == "":
        return None
    return str(value)


def _score(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    try:
        return finite_number(float(value))
    except OverflowError:  # an integer no float holds
        return None


def write_log(rows: list[dict[str, Any]], path: str | Path) -> Pulled:
    """The rows as a JSONL retrieval log; what it holds. A document with no id or
    score is written as it is: the log's reader names it as a bad row."""
    turns: dict[str, int] = {}  # message id -> documents (with or without an id)
    no_id = 0
    try:
        with Path(path).open("w", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps({k: v for k, v in row.items() if v is not None}) + "\n")
                document = "rank" in row
                no_id += document and row.get("memory_id") is None
                turns[row["message_id"]] = turns.get(row["message_id"], 0) + document
    except OSError as exc:  # /dev/full, a missing folder, a folder: one line, exit 2
        raise PhoenixError(f"{path}: cannot write the log ({exc.strerror or type(exc).__name__})") from None
    documents = sum(turns.values())
    return Pulled(turns=len(turns), empty_turns=sum(1 for n in turns.values() if n == 0), rows=documents - no_id, no_id=no_id)


# ------------------------------------------------------------------ out


def document_positions(phoenix: Any, project: str, span_ids: Iterable[str], secrets: list[str | None] | None = None) -> dict[tuple[str, str], int]:
    """(span id, memory id) -> the document's 0-based position, for spans of the project."""
    from phoenix.client.types.spans import SpanQuery

    wanted = sorted(set(span_ids))
    positions: dict[tuple[str, str], int] = {}
    for first in range(0, len(wanted), SPAN_CHUNK):
        chunk = wanted[first : first + SPAN_CHUNK]
        query = SpanQuery().where(f"span_kind == 'RETRIEVER' and span_id in {chunk!r}").explode("retrieval.documents", memory_id="document.id")
        found = _call(
            "documents", secrets or [], phoenix.spans.get_spans_dataframe, query=query, project_identifier=project, limit=len(chunk) * 1000
        )
        for (span_id, position), memory_id in zip(found.index, found["memory_id"], strict=True) if len(found) else ():
            positions.setdefault((str(span_id), str(memory_id)), int(position))
    return positions


def label_annotations(
    people: Iterable[Any], judges: Iterable[Any], positions: dict[tuple[str, str], int], *, relevant_grade: int
) -> tuple[list[dict[str, Any]], Pushed]:
    """One document annotation per labelled document of a span, from labels
    (dashboard.database.model.Label) and judge labels (dashboard.database.judge_labels.
    JudgeLabel); the pairs that are no document of a span in ``not_found``.

    Phoenix keeps one annotation per (name, span, position) (it takes no identifier on
    a document annotation), so people's labels of a document make one HUMAN
    annotation (the majority; a tie counts as relevant, as the qrels export does) and
    judge labels count only for a document no person labelled (LLM)."""
    from dashboard.database.model import RELEVANT

    votes: dict[tuple[str, str], list[tuple[str, bool]]] = {}
    for label in people:
        votes.setdefault((label.message_id, label.memory_id), []).append((label.reviewer, label.label == RELEVANT))
    grades: dict[tuple[str, str], list[tuple[str, int]]] = {}
    for judged in judges:
        if (judged.message_id, judged.memory_id) not in votes:
            grades.setdefault((judged.message_id, judged.memory_id), []).append((judged.source, judged.grade))
    # (pair, annotator kind, each label's verdict, who gave them), people first
    verdicts: list[tuple[tuple[str, str], str, list[bool], dict[str, Any]]] = [
        (pair, "HUMAN", [vote for _, vote in given], {"reviewers": sorted(name for name, _ in given)})
        for pair, given in sorted(votes.items())
    ]
    verdicts += [
        (pair, "LLM", [grade >= relevant_grade for _, grade in given], {"judges": sorted(s for s, _ in given), "grades": [g for _, g in sorted(given)]})
        for pair, given in sorted(grades.items())
    ]
    out: list[dict[str, Any]] = []
    pushed = Pushed()
    spans: set[str] = set()
    for (message_id, memory_id), kind, relevant, metadata in verdicts:
        position = positions.get((message_id, memory_id))
        if position is None:
            pushed.not_found.append((message_id, memory_id))
            continue
        verdict = 2 * sum(relevant) >= len(relevant)
        out.append(
            {
                "name": ANNOTATION,
                "annotator_kind": kind,
                "span_id": message_id,
                "document_position": position,
                "result": {"label": "relevant" if verdict else "not_relevant", "score": 1.0 if verdict else 0.0},
                "metadata": {"memory_id": memory_id, "source": "memlens", **metadata},
            }
        )
        spans.add(message_id)
        if kind == "HUMAN":
            pushed.human += 1
        else:
            pushed.llm += 1
    pushed.spans = len(spans)
    return out, pushed


def push_annotations(phoenix: Any, rows: list[dict[str, Any]], secrets: list[str | None] | None = None, chunk: int = 500) -> None:
    for first in range(0, len(rows), chunk):
        _call(
            "annotations", secrets or [], phoenix.spans.log_document_annotations, document_annotations=rows[first : first + chunk], sync=True
        )


def _probe(url: str, deadline: float) -> None:
    """One span query through this module (the outbound registry's probe); a
    problem raises, as a connector error."""
    from connectors.base import BadResponse
    from connectors.http.outbound import PROBE_KEY

    try:
        read_spans(client(url, PROBE_KEY, deadline=deadline), "probe", limit=10, secrets=[PROBE_KEY])
    except PhoenixError as exc:
        raise BadResponse(str(exc)) from None


def _register() -> None:
    from connectors.http.outbound import register_client

    register_client("phoenix", _probe, __name__)


_register()
