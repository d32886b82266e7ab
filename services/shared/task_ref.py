"""Task references (``arvo:10055``, ``swebench:django__django-11099``): the one type and the one parser.

A reference names a task kind and the task's id within that kind. The syntax is kind-neutral:
the kind is a lower-case word, or words joined by hyphens (``arvo-poc``); the id is made of
characters that are safe in a path component, a URL segment and a container label (letters,
digits, ``_ . -``; it never starts with ``.`` or ``-``). An all-digit id is canonical without
leading zeros. A bare id with no kind belongs to the default kind (``arvo``), so ``10055`` and
``arvo:010055`` are the same reference.

What a kind's ids must look like beyond that (ARVO ids are numbers) is the kind's own check.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

DEFAULT_KIND = "arvo"
_KIND = r"[a-z][a-z0-9_]*(?:-[a-z0-9_]+)*"
_ID = r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,199}"
_REF_RE = re.compile(
    rf"^\s*(?:(?P<kind>{_KIND})\s*:\s*)?(?P<id>{_ID})\s*$", re.IGNORECASE | re.ASCII
)


@dataclass(frozen=True, order=True)
class TaskRef:
    """A task kind and the task's id within it; ``str()`` gives the canonical ``kind:id``."""

    kind: str
    id: str

    def __str__(self) -> str:
        return f"{self.kind}:{self.id}"

    @classmethod
    def parse(cls, value: str | int | TaskRef, *, default_kind: str = DEFAULT_KIND) -> TaskRef:
        """``"arvo:010055"`` / ``10055`` -> ``arvo:10055``. Raises ValueError for anything else."""
        if isinstance(value, TaskRef):
            return value
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise ValueError(f"not a task reference: {value!r}")
        if isinstance(value, int) and value < 0:
            raise ValueError(f"not a task reference: {value!r}")
        m = _REF_RE.match(str(value))
        if not m:
            raise ValueError(
                f"not a task reference: {str(value)[:80]!r} (expected <kind>:<id>, e.g. arvo:10055)"
            )
        return cls((m.group("kind") or default_kind).lower(), _canonical_id(m.group("id")))


def _canonical_id(text: str) -> str:
    return str(int(text)) if text.isdigit() else text


def find_refs(text: str, kinds: Iterable[str]) -> list[TaskRef]:
    """Every ``kind:id`` of the given kinds written in free text, in order, without repeats
    (how a task is named in a chat message: ``Task ID: arvo:10055``)."""
    names = sorted({k.lower() for k in kinds}, key=len, reverse=True)
    if not names:
        return []
    pattern = re.compile(
        rf"(?<![A-Za-z0-9_-])(?P<kind>{'|'.join(map(re.escape, names))}):(?P<id>{_ID})",
        re.IGNORECASE | re.ASCII,
    )
    found: dict[TaskRef, None] = {}
    for m in pattern.finditer(text):
        ident = m.group("id").rstrip(".-")  # a sentence's full stop is not part of the id
        if ident:
            found.setdefault(TaskRef(m.group("kind").lower(), _canonical_id(ident)), None)
    return list(found)
