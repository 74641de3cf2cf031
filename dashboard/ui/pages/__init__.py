"""The dashboard's pages: one module per page (what its views/ script draws), beside it
the panels only that page shows, named after it (inspect_feedback.py, quality_runs.py)."""
