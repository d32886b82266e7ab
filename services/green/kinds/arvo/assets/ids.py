"""ARVO task ids: ``10055``, ``"10055"`` and ``"arvo:10055"`` all name the same task."""

from __future__ import annotations

import re

_ID_RE = re.compile(r"^\s*(?:arvo\s*:\s*)?([0-9]{1,12})\s*$", re.IGNORECASE)


def parse_arvo_id(value: str | int) -> str:
    """Return the canonical ARVO id: decimal digits, no leading zeros (``"arvo:010055"`` → ``"10055"``).

    Raises ``ValueError`` for anything else (negative numbers, bools, paths, empty strings):
    the id becomes a path component and a URL segment, so nothing but digits gets through.
    """
    if isinstance(value, bool):
        raise ValueError(f"not an ARVO id: {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"not an ARVO id: {value!r}")
        return str(value)
    if not isinstance(value, str):
        raise ValueError(f"not an ARVO id: {value!r}")
    m = _ID_RE.match(value)
    if not m:
        raise ValueError(f"not an ARVO id: {value!r} (expected digits, e.g. 10055 or arvo:10055)")
    return str(int(m.group(1)))
