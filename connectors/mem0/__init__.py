"""Mem0: the open-source library, the hosted platform, the embedder memlens gives
the library offline, and its history table."""
