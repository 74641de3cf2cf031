"""What a command says when it stops, raised where the command finds it and printed
once by `dashboard/cli/main.py` as ``memlens COMMAND: message``."""

from __future__ import annotations

from connectors.common.errors import EXIT_UNUSABLE, MemlensError


class CommandError(MemlensError):
    """A command's own reason to stop: flags that do not fit together, a file with
    nothing usable, or a domain error with the command's context added (raised
    ``from`` it). `exit_status` is 2 unless the command documents another."""

    def __init__(self, message: str, *, exit_status: int = EXIT_UNUSABLE):
        super().__init__(message)
        self.exit_status = exit_status
