"""`memlens labels history`: see dashboard/cli/labels_database.py."""

from dashboard.cli.labels_database import add_history as add_parser

__all__ = ["add_parser"]
