"""Importing retrieval traces: `python -m benchmarks.trace_import [--spans N]`.

Writes N OpenInference RETRIEVER spans (5 documents each) as OTLP JSON, 100 spans to
an ExportTraceServiceRequest line as a Collector batches them, and the same rows as
a memlens JSONL log, then times in one run:

    baseline json.loads of the OTLP file   parse only, no span walking
    memlens read_log, the same rows as JSONL   the native log import
    memlens read_log, OTLP JSON                spans walked, documents to rows, validated
    memlens read_log, OTLP JSON, 1% bad        one document in a hundred spans without id
    memlens logs export (to_otlp_jsonl)        the read log's records written out as spans

Each import is checked (row counts, the bad documents found exactly); a wrong result
exits non-zero. Wall-clock medians; ratios against the JSONL import of the same run.
Appends the table to benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path

from benchmarks._common import exit_code, report, rows_per_second_table
from dashboard.logs import otlp
from dashboard.logs.retrieval_log import read_log

DOCUMENTS = 5
SPANS_PER_LINE = 100


def attribute(key, value):
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": value}}


def write_files(directory: Path, spans: int, bad_every: int | None = None) -> tuple[Path, Path, int]:
    rng = random.Random(7)
    requests, rows, bad = [], [], 0
    for start in range(0, spans, SPANS_PER_LINE):
        batch = []
        for s in range(start, min(start + SPANS_PER_LINE, spans)):
            span_id = f"{s:016x}"
            attributes = [attribute("openinference.span.kind", "RETRIEVER"), attribute("user.id", f"user-{s % 997}")]
            for d in range(DOCUMENTS):
                memory_id, score = f"mem-{rng.randrange(10**6):06d}-{d}", round(rng.random(), 5)
                if bad_every and s % bad_every == 0 and d == 2:
                    bad += 1
                else:
                    attributes.append(attribute(f"retrieval.documents.{d}.document.id", memory_id))
                    rows.append({"message_id": span_id, "memory_id": memory_id, "rank": d + 1, "score": score,
                                 "user_id": f"user-{s % 997}"})
                attributes.append(attribute(f"retrieval.documents.{d}.document.score", score))
            batch.append({"traceId": f"{s:032x}", "spanId": span_id, "name": "retrieve",
                          "startTimeUnixNano": str(1_767_000_000_000_000_000 + s), "attributes": attributes})
        requests.append({"resourceSpans": [{"resource": {"attributes": [attribute("service.name", "agent")]},
                                            "scopeSpans": [{"scope": {"name": "bench"}, "spans": batch}]}]})
    suffix = "-bad" if bad_every else ""
    traces, log = directory / f"traces{suffix}.json", directory / f"log{suffix}.jsonl"
    traces.write_text("".join(json.dumps(r) + "\n" for r in requests))
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return traces, log, bad


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.trace_import")
    parser.add_argument("--spans", type=int, default=40_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    spans, repeat = args.spans, args.repeat
    rows = spans * DOCUMENTS
    problems = []
    with tempfile.TemporaryDirectory(prefix="memlens-bench-otlp-") as directory:
        traces, log, _ = write_files(Path(directory), spans)
        broken, _, bad = write_files(Path(directory), spans, bad_every=100)
        imported = read_log(traces)
        if len(imported.rows) != rows or imported.issues:
            problems.append(f"otlp: {imported.summary()}")
        if len(read_log(log).rows) != rows:
            problems.append("jsonl rows")
        with_bad = read_log(broken)
        if len(with_bad.issues) != bad or len(with_bad.rows) != rows - bad:
            problems.append(f"otlp with bad documents: {with_bad.summary()}")
        records = [
            {"at": "2026-01-01T00:00:00.000+00:00", "store": "embedded:1", "query_hash": f"{s:016x}", "k": DOCUMENTS,
             "latency_ms": 3.0, "top_k": [{"memory_id": f"m{s}-{d}", "rank": d + 1, "score": 0.5} for d in range(DOCUMENTS)]}
            for s in range(spans)
        ]
        cases = [
            ("memlens read_log, the same rows as JSONL (baseline)", lambda: read_log(log)),
            ("json.loads of every OTLP line (parse only)",
             lambda: [json.loads(line) for line in traces.read_text().splitlines()]),
            ("memlens read_log, OTLP JSON", lambda: read_log(traces)),
            (f"memlens read_log, OTLP JSON, {bad:,} documents without id", lambda: read_log(broken)),
            ("memlens export: read-log records to OTLP JSON", lambda: otlp.to_otlp_jsonl(records)),
        ]
        body = rows_per_second_table(cases, rows, repeat, "step", "time / JSONL import")
    body += (
        f"\n\n{spans:,} RETRIEVER spans of {DOCUMENTS} documents, {SPANS_PER_LINE} spans per OTLP line. The OTLP"
        " reader walks spans in Python (one dict per document) before the same column-wise validation as every"
        f" log; every bad document was named by line and span id. Median of {repeat} runs each."
    )
    report(f"Trace import, {spans:,} spans (benchmarks/trace_import.py)", body)
    return exit_code(problems)


if __name__ == "__main__":
    sys.exit(main())
