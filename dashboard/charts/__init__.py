"""Plotly figures the pages show. No Streamlit here: a figure is built, a page shows it."""
