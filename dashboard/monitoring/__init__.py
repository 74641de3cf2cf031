"""The shipped floor over production logs: one relation of retrieval rows in DuckDB,
windows aggregated in SQL, a baseline, and alerts (docs/monitoring.md). No streamlit."""
