"""What the MemorySync connector adds on top of the HTTP round trip.

Setup: the loopback MemorySync look-alike the tests use
(tests/connectors/memorysync_server.py) over a copy of the demo store, on
127.0.0.1 in this process; end user sam (22 memories).

Timed, medians over REPEAT calls after one warm-up, alternating A/B so load on the
shared machine hits both alike:
- connector: MemorySyncStore.query(text, k) -> QueryResult (request, retries
  check, JSON decode, hits with flattened breakdowns, notes);
- baseline "bare httpx": client.post to the same route with the same headers and
  body, then response.json(): the round trip and decode with no mapping at all;
- reference "server work": the embedded store's own query, which the server runs
  inside every request (query encoding included).

Parsing alone: parse_query_body on a 50-memory body with nested breakdowns, against
json.loads of the same body text (baseline).
"""

from __future__ import annotations

import importlib.util
import json
import sys
import tempfile
from pathlib import Path

import httpx

from benchmarks._common import ROOT, median, report, table, timed

REPEAT = 30
QUERY = "Which UI theme does the user prefer?"


def load_server_module():
    spec = importlib.util.spec_from_file_location("memorysync_server", ROOT / "tests" / "connectors" / "memorysync_server.py")
    assert spec is not None and spec.loader is not None  # a .py file always has both
    module = importlib.util.module_from_spec(spec)
    sys.modules["memorysync_server"] = module
    spec.loader.exec_module(module)
    return module


def alternate(a, b, repeat: int) -> tuple[list[float], list[float]]:
    times_a, times_b = [], []
    for _ in range(repeat):
        times_a += timed(a, 1, warmup=0)
        times_b += timed(b, 1, warmup=0)
    return times_a, times_b


def main() -> None:
    from connectors.embedded.factories import open_demo_store
    from connectors.http.memorysync import MemorySyncStore, parse_query_body

    server_module = load_server_module()
    with tempfile.TemporaryDirectory() as tmp:
        demo = open_demo_store(Path(tmp))
        server = server_module.serve_copy_of(Path(tmp) / "demo.sqlite", Path(tmp))
        store = MemorySyncStore(server.url, server.api_key, end_user_id="sam")
        bare = httpx.Client()
        headers = {"X-API-Key": server.api_key, "X-End-User-ID": "sam"}
        rows = []
        for k in (5, 50):
            def connector(k: int = k):
                return store.query(QUERY, user_id=None, k=k)

            def bare_httpx(k: int = k):
                return bare.post(server.url + "/memory/query", json={"query": QUERY, "k": k}, headers=headers).json()

            connector(), bare_httpx()  # warm-up
            conn_ms, bare_ms = alternate(connector, bare_httpx, REPEAT)
            server_ms = timed(lambda k=k: demo.query(QUERY, user_id="sam", k=k), REPEAT)
            returned = len(connector().hits)
            rows.append(
                [f"k={k} ({returned} returned)", REPEAT, median(bare_ms), median(conn_ms),
                 median(conn_ms) - median(bare_ms), median(conn_ms) / median(bare_ms), median(server_ms)]
            )
        body = bare.post(server.url + "/memory/query", json={"query": QUERY, "k": 50}, headers=headers).text
        decoded = json.loads(body)
        for memory in decoded["memories"]:  # deeper nesting than the server sends
            memory["scoring_breakdown"]["debug"] = {"ann": {"distance": 0.3, "probe": 4}, "label": "x"}
        text = json.dumps(decoded)
        parse_ms = timed(lambda: parse_query_body(json.loads(text)), 200)
        loads_ms = timed(lambda: json.loads(text), 200)
        server.stop()
        demo.close()
        bare.close()
        store.close()

    body_md = table(
        ["query", "n", "bare httpx (ms, baseline)", "connector (ms)", "added (ms)", "vs baseline", "server work: embedded query (ms)"],
        rows,
    )
    body_md += "\n\n" + table(
        ["parse 50 memories", "n", "json.loads (ms, baseline)", "json.loads + parse_query_body (ms)", "vs baseline"],
        [[f"{len(text):,} bytes", 200, median(loads_ms), median(parse_ms), median(parse_ms) / median(loads_ms)]],
    )
    report(
        "http_connectors: MemorySync connector vs a bare httpx round trip",
        f"Loopback MemorySync look-alike over a copy of the demo store; query {QUERY!r}, user sam. "
        f"Medians; connector and baseline alternated.\n\n{body_md}",
    )


if __name__ == "__main__":
    main()
