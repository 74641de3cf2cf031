"""The one redaction every message goes through before anyone sees it.

``redact(value, secrets)`` replaces

- every known secret (an API key, a database password) wherever it appears, and
  every form of it memlens or a server derives (``secret_forms``): URL-encoded,
  JSON-escaped, reversed, inside any base64 text (so the ``Basic`` header built from
  ``public:secret`` is caught whatever comes before the secret), and the secret
  broken by line breaks, spaces or escapes (``\\n``, ``\\u000a``) between its characters,
- the credentials of an ``Authorization``-style value (``Basic ...``, ``Bearer ...``),
  even cut short or built from keys memlens was not told about,
- the password of any URL written ``scheme://user:password@host`` (multi-host
  URLs such as ``postgresql://u:pw@h1:5432,h2:5433/db`` included),
- the value of ``password=``, ``api_key=``, ``token=`` style parameters, in a query
  string or a ``key=value`` connection string,

with ``***``, in strings, dict keys and values and lists. It never raises: a URL it
cannot parse is rewritten by pattern, not parsed.

Redact first, cut afterwards: a secret that straddles a cut would no longer match
and its prefix would survive. ``exception_text`` gives an exception's whole chain
(``__cause__`` / ``__context__``) redacted, for pages and logs.
"""

from __future__ import annotations

import base64
import functools
import json
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, quote_plus

REDACTED = "***"

# user:password@ in any scheme://... ; stops at the first "@" so "u:p@h1,h2" works.
# One slash is enough: a URL passed where a file path was expected comes back from
# pathlib as "postgresql:/user:pw@host/db".
_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*:/{1,2}[^\s:/@]*):(?P<secret>[^\s@/]*)@")
_SECRET_PARAMS = re.compile(
    r"(?P<head>\b(?:password|passwd|pwd|api[_-]?key|access[_-]?token|token|secret)\s*=\s*)"
    r"(?P<secret>'[^']*'|\"[^\"]*\"|[^\s&;,'\"]+)",
    re.IGNORECASE,
)

# "Basic cGstbGYt...", "Bearer sk-...": the scheme stays, the credentials go, even when
# a server echoes only part of the header.
# A credential has a digit, a sign or both cases in it: "Basic authentication failed"
# is left alone, "Basic cGstbGYtUFVC" (a header echoed cut short) is not.
_CREDENTIAL_CHAR = r"[A-Za-z0-9+/=._~\-]"
_AUTH_VALUE = re.compile(
    r"(?P<head>\b(?:Basic|basic|BASIC|Bearer|bearer|BEARER)\s+)"
    rf"(?P<secret>(?={_CREDENTIAL_CHAR}*[0-9+/=._~\-]|{_CREDENTIAL_CHAR}*[a-z]{_CREDENTIAL_CHAR}*[A-Z]|{_CREDENTIAL_CHAR}*[A-Z]{_CREDENTIAL_CHAR}*[a-z])"
    rf"{_CREDENTIAL_CHAR}{{8,}})"
)
# What may stand between two characters of a secret a server broke up or escaped:
# whitespace, or an escape as JSON, Python or a terminal filter writes it.
_BREAK = r"(?:\s|\\[nrt]|\\x[0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4})*"
_MIN_DERIVED = 6  # shorter secrets are replaced as typed only: their forms would hit ordinary text


def _base64_inside(secret: bytes) -> list[str]:
    """The base64 characters that encode ``secret`` wherever it starts in a longer
    text (at each of the three alignments), standard and URL-safe alphabets."""
    found = []
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + secret).decode("ascii").rstrip("=")
        # drop the characters that mix in bits of what comes before or after
        inner = encoded[-(-offset * 8 // 6) if offset else 0 : (offset + len(secret)) * 8 // 6]
        if len(inner) >= _MIN_DERIVED:
            found += [inner, inner.translate(str.maketrans("+/", "-_"))]
    return found


@functools.lru_cache(maxsize=256)
def secret_forms(secret: str) -> tuple[str, ...]:
    """``secret`` and the forms it takes in a message: URL-encoded, JSON-escaped,
    reversed, and inside base64 (a Basic header, a token a server echoes encoded)."""
    forms = {secret}
    if len(secret) >= _MIN_DERIVED:
        forms |= {quote(secret, safe=""), quote_plus(secret), json.dumps(secret)[1:-1], secret[::-1]}
        forms |= set(_base64_inside(secret.encode("utf-8")))
    return tuple(sorted(forms, key=len, reverse=True))


@functools.lru_cache(maxsize=256)
def _broken(secret: str) -> re.Pattern[str] | None:
    """The secret with line breaks, spaces or escapes allowed between its characters."""
    if len(secret) < _MIN_DERIVED:
        return None
    return re.compile(_BREAK.join(re.escape(char) for char in secret))


def _redact_text(text: str, secrets: list[str]) -> str:
    text = _AUTH_VALUE.sub(lambda m: f"{m['head']}{REDACTED}", text)  # first: the whole value, not pieces of it
    for secret in secrets:
        for form in secret_forms(secret):
            text = text.replace(form, REDACTED)
        broken = _broken(secret)
        if broken is not None and secret[0] in text:
            text = broken.sub(REDACTED, text)
    text = _URL_PASSWORD.sub(lambda m: f"{m['head']}:{REDACTED}@", text)
    return _SECRET_PARAMS.sub(lambda m: f"{m['head']}{REDACTED}", text)


# Keys memlens was given in this process (a model's, Langfuse's, Phoenix's): every
# redaction knows them, so a library that logs an answer quoting one (Mem0 logs its
# LLM's 401 body) is redacted where the log is written, on the command's stderr.
_REMEMBERED: set[str] = set()


def remember_secrets(secrets: Iterable[str | None]) -> None:
    """Make every later ``redact`` in this process remove these secrets too."""
    _REMEMBERED.update(s for s in secrets if s)


def redact(value: Any, secrets: Iterable[str | None] = ()) -> Any:
    """`value` with secrets (in every form ``secret_forms`` lists, and broken up),
    credentials of an Authorization value, URL passwords and password-like
    parameters replaced by ***."""
    # Longest first, so a secret that contains another is replaced whole.
    known = sorted({s for s in secrets if s} | _REMEMBERED, key=len, reverse=True)
    return _walk(value, known)


def _walk(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        return _redact_text(value, secrets)
    if isinstance(value, dict):
        return {_walk(k, secrets): _walk(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_walk(v, secrets) for v in value]
    return value


def redact_text(text: str, secrets: Iterable[str | None] = ()) -> str:
    return str(redact(str(text), secrets))


def exception_text(exc: BaseException, secrets: Iterable[str | None] = (), *, limit: int = 5) -> str:
    """``Type: message`` for the exception and up to ``limit`` causes, redacted."""
    parts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(parts) < limit:
        seen.add(id(current))
        message = str(current)
        parts.append(f"{type(current).__name__}: {message}" if message else type(current).__name__)
        current = current.__cause__ or current.__context__
    return redact_text(" <- ".join(parts), secrets)


def shorten(text: str, limit: int) -> str:
    """Whitespace collapsed and cut to ``limit`` characters (call after redacting)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def terminal_line(text: Any) -> str:
    """``text`` as one line that a terminal shows and does not obey: control
    characters (escape sequences, bell, backspace, newlines), bidi overrides and
    line separators are written as escapes (``\\x1b``, ``\\n``, ``\\u202e``)."""
    return "".join(_terminal_char(char) for char in str(text))


# C0 and C1 controls and DEL, but not the tab, line feed and carriage return that
# multi-line output and progress lines use.
_CONTROL_IN_TEXT = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def terminal_text(text: str) -> str:
    """``text`` with its lines kept and every other control character (escape
    sequences, bell, backspace, bidi overrides) written as an escape: what the
    command line writes to a terminal."""
    return _CONTROL_IN_TEXT.sub(lambda m: m.group(0).encode("unicode_escape").decode("ascii"), text)


def _terminal_char(char: str) -> str:
    if char.isprintable() or char == " ":
        return char
    return char.encode("unicode_escape").decode("ascii")
