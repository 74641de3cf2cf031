"""Loopback ports for the tests, in one place: a free one for a server a test starts,
and a closed one for a store that refuses the connection.

Both ask the OS for a port nothing is bound to and let it go, so a server can listen
on it (free_port) or a client finds nobody there (closed_port). Fixed ports such as 1
or 9 are not used: something may listen there on a developer's machine."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A loopback port nothing is bound to, for a server the test starts on it."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def closed_port() -> int:
    """A loopback port nothing listens on: a connection to it is refused."""
    return free_port()
