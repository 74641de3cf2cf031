"""Stores behind HTTP: the shared client boundary (base), MemorySync, and a
JSON service described by a TOML file (json_service)."""
