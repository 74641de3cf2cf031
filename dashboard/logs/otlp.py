"""Retrievals as OpenTelemetry traces, in and out. Pure (no streamlit).

In: the OTLP JSON form the OpenTelemetry Collector's file exporter writes, one
``ExportTraceServiceRequest`` object a line::

    {"resourceSpans": [{"resource": {...}, "scopeSpans": [{"scope": {...}, "spans": [
        {"traceId": "<32 hex>", "spanId": "<16 hex>", "name": "...", "startTimeUnixNano": "...",
         "attributes": [{"key": "...", "value": {"stringValue": "..."}}, ...]}]}]}]}

Every retriever span becomes one turn (``message_id`` = its span id) and its
documents the rows:

- OpenInference: ``openinference.span.kind = RETRIEVER``, documents flattened as
  ``retrieval.documents.N.document.id / .score / .metadata`` (rank = N + 1, or the
  ``rank`` in the document's metadata JSON when present), the query in
  ``input.value``.
- GenAI semantic conventions: ``gen_ai.operation.name = retrieval`` (or a memory
  search operation), documents in ``gen_ai.retrieval.documents`` as a list (or a JSON
  string) of ``{"id", "score"}`` objects in rank order, the query in
  ``gen_ai.retrieval.query.text``.

``user.id`` is the user, the span's start the timestamp, ``memlens.store`` (else the
resource's ``service.name``) the store. The query text is kept only when the reader
asks for it (``include_query``): traces often hold it, a labelling session should not.
A retriever span whose documents carry no id is reported (line, span id, field) and
left out: memlens never guesses an id from text.
A retriever span with no documents at all is a turn the store returned nothing for
(an empty-turn row: docs/monitoring.md); one with an error status is left out.

Out: the app's read log as the same kind of spans (OpenInference and GenAI names,
ids and scores only, the query as its hash), so Phoenix or any OTLP collector can
take it, and reading the file back gives every id, rank and score.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd

from connectors.common.lines import LINE, MAX_RANK, LineIssue, bounded_json, echo
from dashboard.logs.log_files import COLUMNS

# How many non-blank lines format detection looks at for the first JSON object.
SNIFF_LINES = 1000
# OTLP times are unsigned 64-bit nanoseconds (fixed64); a longer one is not a time.
MAX_NANOS = 2**64 - 1
OPENINFERENCE_KIND = "openinference.span.kind"
GENAI_OPERATION = "gen_ai.operation.name"
GENAI_DOCUMENTS = "gen_ai.retrieval.documents"
GENAI_QUERY = "gen_ai.retrieval.query.text"
DOCUMENT_PREFIX = "retrieval.documents."
RETRIEVAL_OPERATIONS = {"retrieval", "retrieve", "search_memory", "memory_search", "memory.search", "query_memory"}
SPANS_PER_LINE = 500  # one ExportTraceServiceRequest per this many reads, as a collector batches


def looks_like_otlp(data: bytes) -> bool:
    """True when the first JSON object of `data` is an OTLP trace request.

    Decided by structure, the object's keys: a request has ``resourceSpans`` (a
    list) and none of a log row's columns. A log whose query, store or extra field
    merely holds the text "resourceSpans" stays a log."""
    start = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    looked = 0
    while start < len(data) and looked < SNIFF_LINES:
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        line, start = data[start:end], end + 1
        if not line.strip():
            continue
        looked += 1
        try:
            value, _ = bounded_json(line.decode("utf-8"))
        except UnicodeDecodeError:
            continue
        if isinstance(value, dict):
            return isinstance(value.get("resourceSpans"), list) and not value.keys() & set(COLUMNS)
    return False


# ------------------------------------------------------------------ in


@dataclass(frozen=True)
class Unreadable:
    """An attribute value memlens will not turn into a number: why, for the issue."""

    why: str


# The longest number text an attribute may hold: a double's shortest form is under
# 25 characters, an int64 under 21; anything longer is refused before it is converted.
MAX_NUMBER_CHARS = 64


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _text(value: Any) -> str | None:
    return None if value is None or isinstance(value, Unreadable) else str(value)


def _number_text(value: Any) -> str | Unreadable:
    text = str(value)
    if len(text) > MAX_NUMBER_CHARS:
        return Unreadable(f"a number of {len(text):,} characters (at most {MAX_NUMBER_CHARS})")
    return text


def _value(any_value: Any) -> Any:
    """An OTLP AnyValue as a plain Python value (intValue arrives as a string); a
    number too long or not a number is `Unreadable`. Nesting is bounded by the line's
    depth check before this recurses."""
    if not isinstance(any_value, dict):
        return None
    if "stringValue" in any_value:
        return any_value["stringValue"]
    if "intValue" in any_value:
        text = _number_text(any_value["intValue"])
        if isinstance(text, Unreadable):
            return text
        try:
            value = int(text)
        except ValueError:
            return Unreadable(f"intValue {echo(any_value['intValue'])} is not a whole number")
        return value if -(2**63) <= value < 2**63 else Unreadable(f"intValue {echo(text)} is out of the 64-bit range")
    if "doubleValue" in any_value:
        value = any_value["doubleValue"]
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            return Unreadable(f"doubleValue {echo(value)} is not a number")
        text = _number_text(value)
        if isinstance(text, Unreadable):
            return text
        try:
            return float(text)
        except ValueError:
            return Unreadable(f"doubleValue {echo(value)} is not a number")
    if "boolValue" in any_value:
        return bool(any_value["boolValue"])
    if "arrayValue" in any_value:
        values = _dict(any_value["arrayValue"]).get("values")
        return [_value(v) for v in values] if isinstance(values, list) else []
    if "kvlistValue" in any_value:
        return _attributes(_dict(any_value["kvlistValue"]).get("values", []))
    return None


def _attributes(items: Any) -> dict[str, Any]:
    if not isinstance(items, list):
        return {}
    return {
        item["key"]: _value(item.get("value"))
        for item in items
        if isinstance(item, dict) and isinstance(item.get("key"), str)
    }


def _hex_id(value: Any) -> str:
    """Span and trace ids: hex as the OTLP JSON spec writes them; base64 (protobuf's
    own JSON mapping) is accepted and turned into hex."""
    if not isinstance(value, str) or not value:
        return ""
    text = value.strip()
    if len(text) in (16, 32) and all(c in "0123456789abcdefABCDEF" for c in text):
        return text.lower()
    try:
        return base64.b64decode(text, validate=True).hex()
    except (binascii.Error, ValueError):
        return text


def _is_retriever(attributes: dict[str, Any]) -> bool:
    if str(attributes.get(OPENINFERENCE_KIND, "")).upper() == "RETRIEVER":
        return True
    return str(attributes.get(GENAI_OPERATION, "")).lower() in RETRIEVAL_OPERATIONS


def _score(value: Any) -> Any:
    """A document's score as the log's score column takes it; Unreadable when it is
    a number no float holds (a 400-digit integer in a JSON list, say)."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError:
            return Unreadable(f"a number of {len(str(value)):,} digits")
    if isinstance(value, (float, Unreadable)) or value is None:
        return value
    return str(value)


def _rank(value: Any, default: int) -> int | Unreadable:
    if not isinstance(value, int) or isinstance(value, bool):
        return default
    return value if -MAX_RANK <= value <= MAX_RANK else Unreadable(f"rank out of range (at most {MAX_RANK:,})")


def _documents(attributes: dict[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
    """([{id, score, rank, field}] in index order, from either convention; why the
    GenAI documents text is unreadable, when it is). A document with a value that
    cannot be read carries ``problem``: (field, message)."""
    flattened: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        if not key.startswith(DOCUMENT_PREFIX):
            continue
        index_text, _, rest = key[len(DOCUMENT_PREFIX) :].partition(".")
        if not index_text.isdigit() or len(index_text) > 9:
            continue
        document = flattened.setdefault(int(index_text), {})
        document[rest.removeprefix("document.")] = value
    documents = []
    for index in sorted(flattened):
        document = flattened[index]
        prefix = f"{DOCUMENT_PREFIX}{index}.document."
        metadata, problem = document.get("metadata"), None
        if isinstance(metadata, str):
            metadata, why = bounded_json(metadata)
            if why is not None:
                problem = (prefix + "metadata", why)
        rank = _rank(metadata.get("rank") if isinstance(metadata, dict) else None, index + 1)
        score = _score(document.get("score"))
        for field, value in ((prefix + "metadata", rank), (prefix + "score", score)):
            if isinstance(value, Unreadable):
                problem = (field, value.why)
        documents.append({
            "id": document.get("id"), "score": score, "rank": rank, "field": prefix + "id", "problem": problem,
            # the agent's decision and a shadow config's (RetrievalSpans); not true or false: none
            "kept": _flag(document.get("memlens.kept")), "shadow_kept": _flag(document.get("memlens.shadow_kept")),
        })  # fmt: skip
    if documents:
        return documents, None
    listed = attributes.get(GENAI_DOCUMENTS)
    if isinstance(listed, str):
        listed, why = bounded_json(listed)
        if why is not None:
            return [], why
    for index, document in enumerate(listed if isinstance(listed, list) else []):
        document = document if isinstance(document, dict) else {}
        score = _score(document.get("score"))
        problem = (f"{GENAI_DOCUMENTS}[{index}].score", score.why) if isinstance(score, Unreadable) else None
        documents.append(
            {"id": document.get("id"), "score": score, "rank": index + 1, "field": f"{GENAI_DOCUMENTS}[{index}].id", "problem": problem}
        )
    return documents, None


def _flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _timestamp(nanos: Any) -> str | None | Unreadable:
    """A span's start as ISO 8601; None when it has none; Unreadable when it is not
    an unsigned 64-bit count of nanoseconds."""
    if nanos is None or nanos == "":
        return None
    text = _number_text(nanos)
    if isinstance(text, Unreadable):
        return text
    if isinstance(nanos, bool) or not text.isdigit():
        return Unreadable(f"{echo(nanos)} is not a whole number of nanoseconds")
    value = int(text)
    if value > MAX_NANOS:
        return Unreadable(f"{echo(text)} is out of range (at most {MAX_NANOS:,})")
    if value <= 0:
        return None
    return datetime.fromtimestamp(value / 1e9, tz=UTC).isoformat(timespec="microseconds")


def _spans(request: dict[str, Any]) -> Iterable[tuple[dict[str, Any], dict[str, Any]]]:
    """(resource attributes, span) for every span of one request."""
    for resource_spans in _list(request.get("resourceSpans")):
        if not isinstance(resource_spans, dict):
            continue
        resource = _attributes(_dict(resource_spans.get("resource")).get("attributes"))
        for scope_spans in _list(resource_spans.get("scopeSpans")):
            for span in _list(_dict(scope_spans).get("spans")):
                if isinstance(span, dict):
                    yield resource, span


def read_otlp(data: bytes, name: str, *, include_query: bool = False) -> tuple[pd.DataFrame, np.ndarray, list[LineIssue], int]:
    """(rows in the log's columns, the line of each row, span issues, documents read).

    A line that is not a JSON object is one issue; a retriever span whose documents
    lack ids is one issue per document, named by line and span id; every other row
    is returned for the usual column checks."""
    rows: list[dict[str, Any]] = []
    lines: list[int] = []
    issues: list[LineIssue] = []
    documents_read = 0
    for number, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            # The JSONL reader's bounds, line by line: depth, number length.
            request, problem = bounded_json(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            request, problem = None, f"not valid UTF-8 at byte {exc.start + 1}"
        if problem is not None:
            issues.append(LineIssue(name, number, LINE, problem))
            continue
        if not isinstance(request, dict) or "resourceSpans" not in request:
            issues.append(LineIssue(name, number, LINE, "not an OTLP ExportTraceServiceRequest (no resourceSpans)"))
            continue
        for resource, span in _spans(request):
            attributes = _attributes(span.get("attributes"))
            if not _is_retriever(attributes):
                continue
            span_id = _hex_id(span.get("spanId"))
            documents, documents_problem = _documents(attributes)
            if documents_problem is not None:
                issues.append(LineIssue(name, number, GENAI_DOCUMENTS, f"span {span_id or '(no id)'}: {documents_problem}"))
                continue
            if not documents and (span.get("status") or {}).get("code") in (2, "STATUS_CODE_ERROR"):
                continue  # a failed retrieval: the store did not answer, so no turn to count
            if not documents and span_id:
                # the store returned nothing: one empty-turn row (no memory_id, rank or score)
                documents = [{"id": None, "score": None, "rank": None, "field": "", "problem": None, "empty": True}]
            if not documents:
                issues.append(LineIssue(name, number, "retrieval.documents", f"span {span_id or '(no id)'}: a retriever span with no documents"))
                continue
            if not span_id:
                issues.append(LineIssue(name, number, "spanId", "a retriever span with no span id: its rows have no turn"))
                documents_read += len(documents)
                continue
            stamp = _timestamp(span.get("startTimeUnixNano"))
            if isinstance(stamp, Unreadable):
                issues.append(LineIssue(name, number, "startTimeUnixNano", f"span {span_id}: {stamp.why}"))
                documents_read += len(documents)
                continue
            query = _text(attributes.get("input.value") or attributes.get(GENAI_QUERY))
            user = _text(attributes.get("user.id"))
            store = _text(attributes.get("memlens.store") or resource.get("service.name"))
            # the floor the agent applied (RetrievalSpans writes it as RetrievalLog does);
            # anything but a number is no floor, as the file readers take it
            floor = attributes.get("memlens.floor")
            floor = floor if isinstance(floor, int | float) and not isinstance(floor, bool) else None
            floor_segment = _text(attributes.get("memlens.floor_segment"))
            rule, shadow_rule = attributes.get("memlens.rule"), attributes.get("memlens.shadow_rule")
            decided = {
                "rule": rule if isinstance(rule, str) else None,
                "shadow_rule": shadow_rule if isinstance(shadow_rule, str) else None,
            }
            for document in documents:
                documents_read += 1
                memory_id = document["id"]
                if document.get("empty"):
                    pass
                elif memory_id is None or isinstance(memory_id, Unreadable) or (isinstance(memory_id, str) and not memory_id.strip()):
                    issues.append(LineIssue(name, number, document["field"], f"span {span_id}: the document has no id (not guessed from its text)"))
                    continue
                if document["problem"] is not None:
                    field, why = document["problem"]
                    issues.append(LineIssue(name, number, field, f"span {span_id}: {why}"))
                    continue
                rows.append(
                    {
                        "message_id": span_id,
                        "memory_id": None if memory_id is None else str(memory_id),
                        "rank": document["rank"],
                        "score": document["score"],
                        "user_id": user,
                        "query": query if include_query else None,
                        "timestamp": stamp,
                        "store": store,
                        "floor": floor,
                        "floor_segment": floor_segment,
                        **decided,
                        "kept": document.get("kept"),
                        "shadow_kept": document.get("shadow_kept"),
                    }
                )
                lines.append(number)
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    frame["rank"] = frame["rank"].astype(object)
    frame["score"] = frame["score"].astype(object)
    return frame, np.array(lines, dtype=np.int64), issues, documents_read


# ------------------------------------------------------------------ out


def _attribute(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": str(value)}}


def _nanos(stamp: Any) -> int:
    try:
        parsed = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except ValueError:
        return 0
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return int(parsed.timestamp() * 1_000_000) * 1000


def record_span(record: dict[str, Any], position: int) -> dict[str, Any]:
    """One read-log record as an OTLP span: ids and scores, never text."""
    # Stable ids from what identifies a read (exporting twice gives the same spans).
    identity = "|".join(str(record.get(key)) for key in ("at", "store", "source", "query_hash", "user_hash"))
    seed = hashlib.sha256(f"{position}|{identity}".encode()).hexdigest()
    end = _nanos(record.get("at"))
    latency = record.get("latency_ms")
    start = end - int(float(latency) * 1e6) if isinstance(latency, (int, float)) and end else end
    attributes = [
        _attribute(OPENINFERENCE_KIND, "RETRIEVER"),
        _attribute(GENAI_OPERATION, "retrieval"),
    ]
    for key in ("store", "source", "query_hash", "user_hash", "k", "candidate_count", "latency_ms"):
        if record.get(key) is not None:
            attributes.append(_attribute(f"memlens.{key}", record[key]))
    for index, hit in enumerate(record.get("top_k") or []):
        prefix = f"{DOCUMENT_PREFIX}{index}.document."
        attributes.append(_attribute(prefix + "id", str(hit.get("memory_id"))))
        if isinstance(hit.get("score"), (int, float)):
            attributes.append(_attribute(prefix + "score", float(hit["score"])))
        if hit.get("rank") is not None:
            attributes.append(_attribute(prefix + "metadata", f'{{"rank": {int(hit["rank"])}}}'))
    span: dict[str, Any] = {
        "traceId": seed[:32],
        "spanId": seed[32:48],
        "name": "memlens.read",
        "kind": 1,  # SPAN_KIND_INTERNAL, as the GenAI retrieval span asks
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(end),
        "attributes": attributes,
        "status": {"code": 2, "message": str(record["error"])} if record.get("error") else {},
    }
    return span


def export_requests(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records as ExportTraceServiceRequest objects, SPANS_PER_LINE spans each."""
    requests = []
    for start in range(0, len(records), SPANS_PER_LINE):
        spans = [record_span(r, start + i) for i, r in enumerate(records[start : start + SPANS_PER_LINE])]
        requests.append(
            {
                "resourceSpans": [
                    {
                        "resource": {"attributes": [_attribute("service.name", "memlens")]},
                        "scopeSpans": [{"scope": {"name": "memlens.read_log"}, "spans": spans}],
                    }
                ]
            }
        )
    return requests


def to_otlp_jsonl(records: list[dict[str, Any]]) -> bytes:
    """The read log as OTLP JSON lines, as a collector's file exporter writes them."""
    return b"".join(json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in export_requests(records))
