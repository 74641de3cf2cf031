"""Pieces several pages share: the sidebar, the session, access, errors, the caches."""
