"""Loopback ports for the tests, in one place: a free one for a server a test starts,
a closed one for a store that refuses the connection, and a silent one that accepts
and never answers.

Both ask the OS for a port nothing is bound to and let it go, so a server can listen
on it (free_port) or a client finds nobody there (closed_port). Fixed ports such as 1
or 9 are not used: something may listen there on a developer's machine."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator


def free_port() -> int:
    """A loopback port nothing is bound to, for a server the test starts on it."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def closed_port() -> int:
    """A loopback port nothing listens on: a connection to it is refused."""
    return free_port()


@contextlib.contextmanager
def silent_url() -> Iterator[str]:
    """An http URL on loopback where a socket accepts connections (the backlog) and
    never replies: a store behind it times out. Closed when the block ends."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        yield f"http://127.0.0.1:{silent.getsockname()[1]}"
