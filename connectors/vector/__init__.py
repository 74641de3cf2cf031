"""Vector databases and stores read as a table of vectors: Qdrant, Chroma,
PostgreSQL + pgvector, LanceDB, a LangGraph store, and the payload-field rules
they share (fields)."""
