"""Streamlit's own cold-start floor for benchmarks/cold_start.py: a page with the
Inspect page's title and one "Returned" metric, and nothing else. Its paint and its
metric, timed exactly as the app's, are what the frontend costs before any of the
app's own work: loading and starting Streamlit's JavaScript, the WebSocket, one
script run. Run by the benchmark with `streamlit run`."""

import streamlit as st

st.title("Inspect a retrieval")
st.metric("Returned", 5)
