"""What a command says when it stops, raised where the command finds it and printed
once by `dashboard/cli/main.py` as ``memlens COMMAND: message``.

That prefix marks a failure. A line that only informs goes to stderr as ``note: ...``
(``note``) and a warning as ``warning: ...``, so neither reads as an error."""

from __future__ import annotations

import sys

from connectors.common.errors import EXIT_UNUSABLE, MemlensError


class CommandError(MemlensError):
    """A command's own reason to stop: flags that do not fit together, a file with
    nothing usable, or a domain error with the command's context added (raised
    ``from`` it). `exit_status` is 2 unless the command documents another."""

    def __init__(self, message: str, *, exit_status: int = EXIT_UNUSABLE):
        super().__init__(message)
        self.exit_status = exit_status


def note(text: str) -> None:
    """An informational line on stderr, never with the error's ``memlens COMMAND:`` prefix."""
    print(f"note: {text}", file=sys.stderr)


def warning(text: str) -> None:
    """A line about input the command left out or a result to doubt, while it goes on:
    ``warning:``, never the error's ``memlens COMMAND:`` prefix (the command did not stop)."""
    print(f"warning: {text}", file=sys.stderr)
