"""The one base of every error memlens tells its user about, and its exit status.

Every domain error, in `connectors/` and in `dashboard/`, derives from `MemlensError`:
a store's failure (`connectors.base.ConnectorError`), a model's
(`dashboard.judging.client.ModelError`), the app database's, a file's or a log's that
cannot be used. Its message is written for the user (what is wrong, with the file, line
and field where there is one), so a page shows it in an error box and the `memlens`
command prints it once, in `dashboard/cli/main.py`, as ``memlens COMMAND: message``
and exits with the error's `exit_status`. Anything else that escapes is a bug and
keeps its traceback.

It lives here, at the bottom of the import rule, because connectors never import
`dashboard` and every side may import `connectors.common`.
"""

from __future__ import annotations

# The exit status of input that cannot be used (a file, a flag, a store or a database
# that does not answer): the one definition every command's failure exits with.
EXIT_UNUSABLE = 2


class MemlensError(Exception):
    """A failure the user can act on; its message is what they are told."""

    exit_status: int = EXIT_UNUSABLE
    # The command prints it after ``memlens COMMAND:``; False for a failure that is no
    # one command's (the app database's setting), said after ``memlens:``.
    names_command: bool = True


class ServiceError(MemlensError):
    """A failure of something memlens asked over the wire (a store, a model): the
    message, and the status and request id the service gave, shown with it so the
    user can find the request in the service's own log."""

    def __init__(self, message: str, *, request_id: str | None = None, status: int | None = None):
        super().__init__(message)
        self.message = message
        self.request_id = request_id
        self.status = status

    def __str__(self) -> str:
        if self.request_id:
            return f"{self.message} (request id {self.request_id})"
        return self.message
