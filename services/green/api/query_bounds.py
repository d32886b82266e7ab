"""Ranges of the numbers a query string may carry (422 outside them).

A number past SQLite's 64-bit integers (``offset=99999999999999999999``) would otherwise reach
the database and fail there as a server error; these bounds are far above any real listing.
"""

from __future__ import annotations

MAX_OFFSET = 100_000_000
"""Largest ``offset`` of a listing (REST /tasks, /tasks/{id}/commands)."""
MAX_PAGE = 1_000_000
"""Largest ``page`` of a dashboard listing."""
MAX_SEQ = 1_000_000
"""Largest command number a live stream may resume after (``after``, ``Last-Event-ID``)."""
