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
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd

from connectors.common.lines import LineIssue
from dashboard.logs.log_files import COLUMNS

SNIFF_BYTES = 4096
OPENINFERENCE_KIND = "openinference.span.kind"
GENAI_OPERATION = "gen_ai.operation.name"
GENAI_DOCUMENTS = "gen_ai.retrieval.documents"
GENAI_QUERY = "gen_ai.retrieval.query.text"
DOCUMENT_PREFIX = "retrieval.documents."
RETRIEVAL_OPERATIONS = {"retrieval", "retrieve", "search_memory", "memory_search", "memory.search", "query_memory"}
SPANS_PER_LINE = 500  # one ExportTraceServiceRequest per this many reads, as a collector batches


def looks_like_otlp(data: bytes) -> bool:
    """True when the first JSON object of `data` is an OTLP trace request."""
    head = data[:SNIFF_BYTES].lstrip(b"\xef\xbb\xbf \t\r\n")
    return head.startswith(b"{") and b'"resourceSpans"' in head


# ------------------------------------------------------------------ in


def _value(any_value: Any) -> Any:
    """An OTLP AnyValue as a plain Python value (intValue arrives as a string)."""
    if not isinstance(any_value, dict):
        return None
    if "stringValue" in any_value:
        return any_value["stringValue"]
    if "intValue" in any_value:
        try:
            return int(any_value["intValue"])
        except (TypeError, ValueError):
            return None
    if "doubleValue" in any_value:
        value = any_value["doubleValue"]
        return float(value) if isinstance(value, (int, float, str)) else None
    if "boolValue" in any_value:
        return bool(any_value["boolValue"])
    if "arrayValue" in any_value:
        return [_value(v) for v in (any_value["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in any_value:
        return _attributes((any_value["kvlistValue"] or {}).get("values", []))
    return None


def _attributes(items: Any) -> dict[str, Any]:
    if not isinstance(items, list):
        return {}
    return {item["key"]: _value(item.get("value")) for item in items if isinstance(item, dict) and "key" in item}


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


def _documents(attributes: dict[str, Any]) -> list[dict[str, Any]]:
    """[{index, id, score, rank, field}] in index order, from either convention."""
    flattened: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        if not key.startswith(DOCUMENT_PREFIX):
            continue
        index_text, _, rest = key[len(DOCUMENT_PREFIX) :].partition(".")
        if not index_text.isdigit():
            continue
        document = flattened.setdefault(int(index_text), {})
        document[rest.removeprefix("document.")] = value
    documents = []
    for index in sorted(flattened):
        document = flattened[index]
        metadata = document.get("metadata")
        if isinstance(metadata, str):
            try:
                metadata = json.loads(metadata)
            except json.JSONDecodeError:
                metadata = None
        rank = metadata.get("rank") if isinstance(metadata, dict) else None
        documents.append(
            {
                "id": document.get("id"),
                "score": document.get("score"),
                "rank": rank if isinstance(rank, int) and not isinstance(rank, bool) else index + 1,
                "field": f"{DOCUMENT_PREFIX}{index}.document.id",
            }
        )
    if documents:
        return documents
    listed = attributes.get(GENAI_DOCUMENTS)
    if isinstance(listed, str):
        try:
            listed = json.loads(listed)
        except json.JSONDecodeError:
            listed = None
    for index, document in enumerate(listed if isinstance(listed, list) else []):
        document = document if isinstance(document, dict) else {}
        documents.append(
            {"id": document.get("id"), "score": document.get("score"), "rank": index + 1, "field": f"{GENAI_DOCUMENTS}[{index}].id"}
        )
    return documents


def _timestamp(nanos: Any) -> str | None:
    try:
        value = int(nanos)
    except (TypeError, ValueError):
        return None
    if value <= 0:
        return None
    return datetime.fromtimestamp(value / 1e9, tz=UTC).isoformat(timespec="microseconds")


def _spans(request: dict[str, Any]) -> Iterable[tuple[dict[str, Any], dict[str, Any]]]:
    """(resource attributes, span) for every span of one request."""
    for resource_spans in request.get("resourceSpans") or []:
        if not isinstance(resource_spans, dict):
            continue
        resource = _attributes((resource_spans.get("resource") or {}).get("attributes"))
        for scope_spans in resource_spans.get("scopeSpans") or []:
            for span in (scope_spans or {}).get("spans") or []:
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
            request = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            issues.append(LineIssue(name, number, "(line)", f"not valid JSON: {getattr(exc, 'msg', exc)}"))
            continue
        if not isinstance(request, dict) or "resourceSpans" not in request:
            issues.append(LineIssue(name, number, "(line)", "not an OTLP ExportTraceServiceRequest (no resourceSpans)"))
            continue
        for resource, span in _spans(request):
            attributes = _attributes(span.get("attributes"))
            if not _is_retriever(attributes):
                continue
            span_id = _hex_id(span.get("spanId"))
            documents = _documents(attributes)
            if not documents and (span.get("status") or {}).get("code") in (2, "STATUS_CODE_ERROR"):
                continue  # a failed retrieval: the store did not answer, so no turn to count
            if not documents and span_id:
                # the store returned nothing: one empty-turn row (no memory_id, rank or score)
                documents = [{"id": None, "score": None, "rank": None, "field": "", "empty": True}]
            if not documents:
                issues.append(LineIssue(name, number, "retrieval.documents", f"span {span_id or '(no id)'}: a retriever span with no documents"))
                continue
            if not span_id:
                issues.append(LineIssue(name, number, "spanId", "a retriever span with no span id: its rows have no turn"))
                documents_read += len(documents)
                continue
            query = attributes.get("input.value") or attributes.get(GENAI_QUERY)
            user = attributes.get("user.id")
            store = attributes.get("memlens.store") or resource.get("service.name")
            stamp = _timestamp(span.get("startTimeUnixNano"))
            for document in documents:
                documents_read += 1
                memory_id = document["id"]
                if document.get("empty"):
                    pass
                elif memory_id is None or (isinstance(memory_id, str) and not memory_id.strip()):
                    issues.append(LineIssue(name, number, document["field"], f"span {span_id}: the document has no id (not guessed from its text)"))
                    continue
                score = document["score"]
                rows.append(
                    {
                        "message_id": span_id,
                        "memory_id": None if memory_id is None else str(memory_id),
                        "rank": document["rank"],
                        "score": score if isinstance(score, (int, float)) and not isinstance(score, bool) else (None if score is None else str(score)),
                        "user_id": None if user is None else str(user),
                        "query": str(query) if include_query and query is not None else None,
                        "timestamp": stamp,
                        "store": None if store is None else str(store),
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
