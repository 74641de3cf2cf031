"""`memlens labels ...`: the label database's labels as files.

    memlens labels import FILE --session NAME    people's labels from a file, as a session

Each action is a module of its own (ACTIONS below), so adding one is one line here.
"""

from __future__ import annotations

import argparse
import importlib
from typing import Any

# Each action and the module that adds it, in the order `memlens labels --help` lists them.
ACTIONS = (
    ("import", "dashboard.cli.labels_import"),  # memlens labels import FILE --session NAME
)


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser = commands.add_parser("labels", help="people's labels: import a label file as a session")
    actions = parser.add_subparsers(dest="labels_action", required=True)
    for _, module in ACTIONS:
        importlib.import_module(module).add_parser(actions)
    return parser
