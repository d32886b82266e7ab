"""Splits: seeded ones (the same ``--sample N --seed S`` selects the same tasks on every
machine) and the named ones kept with the client as data (``data/splits/<name>.txt``: FLBench's
900 tasks are ``flbench-900``)."""

from __future__ import annotations

import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from services.shared.files import write_atomic

SPLIT_FILE = "split.txt"
SPLITS_DIR = Path(__file__).parent / "data" / "splits"
"""The named splits: one file each, a split file as any other (``#`` comments, one ref a line)."""


def split_names() -> list[str]:
    """The named splits, sorted."""
    return sorted(p.stem for p in SPLITS_DIR.glob("*.txt"))


def named_split(name: str) -> str:
    """The text of a named split; ValueError, naming the known ones, for another name."""
    if name not in split_names():
        raise ValueError(f"no split named {name!r} (known: {', '.join(split_names())})")
    return (SPLITS_DIR / f"{name}.txt").read_text(encoding="utf-8")


def sample(population: Iterable[str], n: int, seed: int) -> list[str]:
    """``n`` task references drawn from ``population`` (duplicates ignored), the same for the same seed.

    The population is sorted first, so the order it was listed in does not matter."""
    ids = sorted(set(population), key=_id_key)
    if n < 1:
        raise ValueError(f"--sample must be at least 1, got {n}")
    if n > len(ids):
        raise ValueError(f"--sample {n} is more than the {len(ids)} known task(s)")
    return random.Random(seed).sample(ids, n)


def _id_key(ref: str) -> tuple[str, int, int | str]:
    """Kind, then numbers in numeric order before other ids (``arvo:99`` before ``arvo:100``)."""
    kind, _, ident = ref.rpartition(":")
    return (kind, 0, int(ident)) if ident.isdigit() else (kind, 1, ident)


def split_text(refs: Iterable[str], header: str) -> str:
    """A split file: a comment line saying how it was made, then one ref per line."""
    return f"# {header}\n" + "".join(f"{r}\n" for r in refs)


def write_split(run_dir: Path, refs: list[str], args: dict[str, Any]) -> Path:
    """The run's task references as a split file (``arena run --ids-file <run>/split.txt`` repeats it)."""
    how = f"--sample {args['sample']} --seed {args['seed']}" if args.get("sample") else "ids given"
    header = f"split of run {args.get('run')}: {len(refs)} task(s), {how}" + (
        ", verified only" if args.get("verified_only") else ""
    )
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / SPLIT_FILE
    write_atomic(path, split_text(refs, header).encode())
    return path
