"""A loopback HTTP server answering the two Langfuse public-API endpoints memlens
uses, as Langfuse answers them: `GET /api/public/v2/observations` (Basic auth with the
project's keys, the type / time / `filter` id filters, cursor pages of at most
`page_size`, the observation objects of tests/dashboard/logs/langfuse_observations.json)
and `POST /api/public/scores` (a batch of scores, upserted by id, answered 202
`{"message": "Accepted"}`). Langfuse itself needs PostgreSQL, ClickHouse, Redis and
S3, so it cannot run here; the shapes follow the Langfuse SDK's generated API models.
"""

from __future__ import annotations

import base64
import json
import threading
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

OBSERVATIONS = Path(__file__).parent / "dashboard" / "logs" / "langfuse_observations.json"


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


class LangfuseServer:
    def __init__(self, public_key: str, secret_key: str, page_size: int = 2) -> None:
        self.observations = json.loads(OBSERVATIONS.read_text())
        self.scores: dict[str, dict] = {}
        self.requests: list[tuple[str, str]] = []  # (method, path with query)
        expected = "Basic " + base64.b64encode(f"{public_key}:{secret_key}".encode()).decode()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self, status: int, body: object) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _authorized(self) -> bool:
                server.requests.append((self.command, self.path))
                if self.headers.get("Authorization") != expected:
                    self._answer(401, {"message": "Invalid credentials. Confirm that you've configured the correct host."})
                    return False
                return True

            def do_GET(self) -> None:
                if not self._authorized():
                    return
                url = urlsplit(self.path)
                if url.path != "/api/public/v2/observations":
                    self._answer(404, {"message": "not found"})
                    return
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                found = server.observations
                if "type" in query:
                    found = [o for o in found if o["type"] == query["type"]]
                if "fromStartTime" in query:
                    found = [o for o in found if _when(o["startTime"]) >= _when(query["fromStartTime"])]
                if "toStartTime" in query:
                    found = [o for o in found if _when(o["startTime"]) < _when(query["toStartTime"])]
                for condition in json.loads(query.get("filter", "[]")):
                    if condition["column"] == "id" and condition["operator"] == "any of":
                        found = [o for o in found if o["id"] in condition["value"]]
                start = int(query.get("cursor", "0"))
                size = min(int(query.get("limit", "50")), page_size)
                page = found[start : start + size]
                meta = {"cursor": str(start + size)} if start + size < len(found) else {}
                self._answer(200, {"data": page, "meta": meta})

            def do_POST(self) -> None:
                if not self._authorized():
                    return
                if urlsplit(self.path).path != "/api/public/scores":
                    self._answer(404, {"message": "not found"})
                    return
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                for score in body:
                    server.scores[score["id"]] = score
                self._answer(202, {"message": "Accepted"})

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
