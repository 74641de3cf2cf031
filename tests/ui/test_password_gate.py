"""The password gate slows guessing: after five wrong passwords from one client each
further one locks that client out for twice as long, a locked attempt is refused
unread (even the right password), and the server log records each failure with the
client, never what was typed."""

from __future__ import annotations

import logging

import pytest
from markdown_text import error_texts

from dashboard.password_throttle import FREE_FAILURES, FailureThrottle
from dashboard.ui.widgets import access

PASSWORD = "pw-Zebra-42"
UNLOCK = "FormSubmitter:access_form-Unlock"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def gate(app, monkeypatch):
    monkeypatch.setenv("MEMLENS_PASSWORD", PASSWORD)
    clock = Clock()
    monkeypatch.setattr(access, "THROTTLE", FailureThrottle(clock))
    at = app()
    at.run()
    assert not at.exception, at.exception
    return at, clock


def _try(at, typed: str) -> list[str]:
    at.text_input(key="access_password").input(typed)
    at.button(key=UNLOCK).click().run()
    assert not at.exception, at.exception
    return error_texts(at)


def _unlocked(at) -> bool:
    return not [f for f in at.text_input if f.key == "access_password"]


def test_repeated_wrong_passwords_lock_the_client_out_for_longer_each_time(gate, caplog):
    at, clock = gate
    caplog.set_level(logging.WARNING, logger="dashboard.ui.widgets.access")
    for attempt in range(FREE_FAILURES):
        assert _try(at, f"guess-{attempt}") == ["Wrong password."]
    assert _try(at, "guess-5") == ["Wrong password. Too many wrong passwords: try again in 1 s."]
    # locked: the right password is not even compared
    assert _try(at, PASSWORD) == ["Too many wrong passwords: try again in 1 s."]
    assert not _unlocked(at)
    clock.now += 1.5
    assert _try(at, "guess-6") == ["Wrong password. Too many wrong passwords: try again in 2 s."]
    clock.now += 2.5
    _try(at, PASSWORD)
    assert _unlocked(at)
    logged = [record.getMessage() for record in caplog.records]
    assert sum("wrong password from localhost" in line for line in logged) == FREE_FAILURES + 2
    assert any("refused, locked" in line for line in logged)
    assert not [line for line in logged if "guess-" in line or PASSWORD in line]


def test_the_lock_grows_to_its_cap_and_a_right_password_clears_the_record():
    clock = Clock()
    throttle = FailureThrottle(clock)
    locks = [throttle.failed("10.0.0.7")[1] for _ in range(FREE_FAILURES + 12)]
    assert locks[:FREE_FAILURES] == [0.0] * FREE_FAILURES
    assert locks[FREE_FAILURES : FREE_FAILURES + 4] == [1.0, 2.0, 4.0, 8.0]
    assert locks[-1] == 900.0
    assert throttle.wait("10.0.0.8") == 0.0  # another client is not slowed
    throttle.succeeded("10.0.0.7")
    assert throttle.wait("10.0.0.7") == 0.0
