"""Relevance labels by id: labelling sessions (labelling), sampling turns to label
(sampling), reviewer agreement (agreement) and export (export). The rows live in
the app database (dashboard/database)."""
