"""The task ids a local asset folder holds."""

from __future__ import annotations

from pathlib import Path

from services.green.kinds.arvo.assets.ids import parse_arvo_id


def local_ids(root: Path) -> list[str]:
    """The task ids a local asset folder holds (sub-folders named by an ARVO id), in number
    order."""
    ids = []
    for p in root.iterdir():
        try:
            if p.is_dir() and parse_arvo_id(p.name) == p.name:
                ids.append(p.name)
        except ValueError:
            continue
    return sorted(ids, key=int)
