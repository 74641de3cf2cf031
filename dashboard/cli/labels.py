"""`memlens labels ...`: the label database's labels as files.

    memlens labels import FILE --session NAME    people's labels from a file, as a session
    memlens labels export|adjudicate|history     the label database: one label per pair, a lead's
                                                 final label of a disagreement, label_history

Each action is a module of its own (ACTIONS below), so adding one is one line here.
"""

from __future__ import annotations

import argparse
import importlib
from typing import Any

# Each action and the module that adds it, in the order `memlens labels --help` lists them.
ACTIONS = (
    ("import", "dashboard.cli.labels_import"),  # memlens labels import FILE --session NAME
    ("export", "dashboard.cli.labels_export"),  # memlens labels export --labels URL --format F
    ("adjudicate", "dashboard.cli.labels_adjudicate"),  # memlens labels adjudicate SESSION --adjudicator NAME
    ("history", "dashboard.cli.labels_history"),  # memlens labels history
)


def add_parser(commands: Any) -> argparse.ArgumentParser:
    parser = commands.add_parser("labels", help="people's labels: import, export, adjudicate, history")
    actions = parser.add_subparsers(dest="labels_action", required=True)
    for name, module in ACTIONS:
        action = importlib.import_module(module).add_parser(actions)
        action.set_defaults(command_label=f"labels {name}")  # what its errors start with
    return parser
