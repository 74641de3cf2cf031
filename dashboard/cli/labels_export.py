"""`memlens labels export`: see dashboard/cli/labels_database.py."""

from dashboard.cli.labels_database import add_export as add_parser

__all__ = ["add_parser"]
