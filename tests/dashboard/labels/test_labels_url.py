"""MEMLENS_LABELS_URL: a PostgreSQL URL, a libpq key=value string, or a SQLite file
path in a writable folder. Anything else is refused with a message that quotes no
part of the value (it may hold a password), and never becomes a file named after it."""

from __future__ import annotations

import os
import subprocess

import pytest

from dashboard.database import AppDatabase, app_database_target
from dashboard.database.model import LabelStoreError

SECRET = "hunter2secret"
CONNINFO = f"host=127.0.0.1 port=1 dbname=labels user=memlens password={SECRET} connect_timeout=1"


def target(value: str, tmp_path) -> str:
    return app_database_target({"MEMLENS_LABELS_URL": value}, tmp_path / "data")


def test_a_key_value_string_opens_postgresql_not_a_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert target(CONNINFO, tmp_path) == CONNINFO
    with pytest.raises(LabelStoreError) as raised:
        AppDatabase(CONNINFO, timeout=1)
    message = str(raised.value)
    assert "The label database at host=127.0.0.1 port=1 dbname=labels user=memlens password=*** " in message
    assert "cannot be reached" in message
    assert SECRET not in message
    assert list(tmp_path.iterdir()) == []  # no file named after the password


def test_quoted_values_are_part_of_a_key_value_string(tmp_path):
    value = "host=db.internal dbname='my labels' password='a b\\'c'"
    assert target(value, tmp_path) == value


@pytest.mark.parametrize(
    "value,says",
    [
        (f"mysql://memlens:{SECRET}@db/labels", "is a mysql:// URL, which is not a label database memlens opens"),
        (f"host=db password={SECRET} 'broken", "looks like a PostgreSQL key=value string but is not one"),
        (f"labels password={SECRET}", "looks like a PostgreSQL key=value string but is not one"),
    ],
)
def test_anything_else_is_refused_without_quoting_it(tmp_path, value, says):
    with pytest.raises(LabelStoreError) as raised:
        target(value, tmp_path)
    assert says in str(raised.value)
    assert "MEMLENS_LABELS_URL" in str(raised.value)
    assert SECRET not in str(raised.value)


def test_a_sqlite_path_in_a_folder_the_server_cannot_write_is_refused(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    # Root writes through file modes, so as root the folder is made immutable instead.
    as_root = os.geteuid() == 0
    subprocess.run(["chattr", "+i", str(locked)], check=True) if as_root else locked.chmod(0o555)
    try:
        with pytest.raises(LabelStoreError, match=r"names a SQLite file in a folder this server cannot write \(.*locked\)"):
            target(str(locked / "sub" / "labels.sqlite"), tmp_path)
    finally:
        subprocess.run(["chattr", "-i", str(locked)], check=True) if as_root else locked.chmod(0o755)


def test_sqlite_paths_and_urls_still_work(tmp_path):
    assert target(str(tmp_path / "new" / "labels.sqlite"), tmp_path) == str(tmp_path / "new" / "labels.sqlite")
    assert target("postgresql://u:pw@h/db", tmp_path) == "postgresql://u:pw@h/db"
    assert app_database_target({}, tmp_path) == str(tmp_path / "labels.sqlite")


def test_the_cli_says_what_is_wrong_instead_of_a_traceback(tmp_path, monkeypatch, capsys):
    from dashboard.cli.main import main

    monkeypatch.setenv("MEMLENS_LABELS_URL", f"mysql://memlens:{SECRET}@db/labels")
    assert main(["runs", "list"]) == 2
    err = capsys.readouterr().err
    assert "memlens: MEMLENS_LABELS_URL is a mysql:// URL" in err and SECRET not in err
