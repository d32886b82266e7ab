"""Seeded splits: the same ``--sample N --seed S`` selects the same tasks on every machine."""

from __future__ import annotations

import random
import re
from collections.abc import Iterable
from pathlib import Path

from services.green.assets.ids import parse_arvo_id


def sample(population: Iterable[str], n: int, seed: int) -> list[str]:
    """``n`` ids drawn from ``population`` (duplicates ignored), the same for the same seed.

    The population is sorted first, so the order it was listed in does not matter."""
    ids = sorted(set(population), key=_id_key)
    if n < 1:
        raise ValueError(f"--sample must be at least 1, got {n}")
    if n > len(ids):
        raise ValueError(f"--sample {n} is more than the {len(ids)} known task(s)")
    return random.Random(seed).sample(ids, n)


def _id_key(ref: str) -> tuple[int, int | str]:
    return (0, int(ref)) if ref.isdigit() else (1, ref)


def read_refs(text: str) -> list[str]:
    """Ids from a split or ids file: whitespace or comma separated, ``#`` starts a comment."""
    refs = []
    for line in text.splitlines():
        refs += [t for t in re.split(r"[\s,]+", line.split("#", 1)[0]) if t]
    return refs


def local_ids(root: Path) -> list[str]:
    """The task ids a local asset folder holds (sub-folders named by an ARVO id)."""
    ids = []
    for p in root.iterdir():
        try:
            if p.is_dir() and parse_arvo_id(p.name) == p.name:
                ids.append(p.name)
        except ValueError:
            continue
    return sorted(ids, key=_id_key)


def split_text(refs: Iterable[str], header: str) -> str:
    """A split file: a comment line saying how it was made, then one ref per line."""
    return f"# {header}\n" + "".join(f"{r}\n" for r in refs)
