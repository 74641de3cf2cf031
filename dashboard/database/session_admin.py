"""What a lead changes about a labelling session after it was drawn: its reviewers
and overlap, who is assigned which turn, archiving, deleting. The rules (which
turns may move) are dashboard/labels/session_admin.py; this is the SQL.

Deleting a session removes its rows, assignments and skips, never a label: labels
are keyed by (message, memory, reviewer), not by session, so they stay in the label
database (and in every store-wide figure) after their session is gone.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager

from dashboard.database.model import utc_now


class SessionAdminMethods:
    _run: Callable[..., list[tuple]]
    _run_many: Callable[..., None]
    _transaction: Callable[..., AbstractContextManager[None]]

    def _require_session(self, name: str) -> None:
        if not self._run("SELECT 1 FROM label_sessions WHERE name=?", (name,)):
            raise KeyError(f"no labelling session named {name!r}")

    def update_session(
        self, name: str, *, reviewers: list[str], overlap: float, assignments: dict[str, list[str]]
    ) -> None:
        """New reviewers and overlap, and the assignments of the turns in
        `assignments` replaced (other turns keep theirs), in one transaction."""
        with self._transaction(lock_key="session\x1f" + name):
            self._require_session(name)
            self._run(
                "UPDATE label_sessions SET reviewers=?, overlap=? WHERE name=?", (json.dumps(reviewers), overlap, name)
            )
            self._replace_assignments(name, assignments)

    def replace_assignments(self, name: str, assignments: dict[str, list[str]]) -> None:
        with self._transaction(lock_key="session\x1f" + name):
            self._require_session(name)
            self._replace_assignments(name, assignments)

    def _replace_assignments(self, name: str, assignments: dict[str, list[str]]) -> None:
        self._run_many(
            "DELETE FROM session_assignments WHERE session=? AND message_id=?", [(name, msg) for msg in assignments]
        )
        self._run_many(
            "INSERT INTO session_assignments (session, message_id, reviewer) VALUES (?, ?, ?)",
            [(name, msg, reviewer) for msg, reviewers in assignments.items() for reviewer in reviewers],
        )

    def archive_session(self, name: str, archived: bool = True) -> None:
        with self._transaction(lock_key="session\x1f" + name):
            self._require_session(name)
            self._run("UPDATE label_sessions SET archived_at=? WHERE name=?", (utc_now() if archived else None, name))

    def delete_session(self, name: str) -> None:
        """The session, its rows, assignments and skips; its labels stay."""
        with self._transaction(lock_key="session\x1f" + name):
            self._require_session(name)
            for table in ("session_skips", "session_assignments", "session_items"):
                self._run(f"DELETE FROM {table} WHERE session=?", (name,))
            self._run("DELETE FROM label_sessions WHERE name=?", (name,))
