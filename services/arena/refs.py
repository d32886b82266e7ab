"""The batch's task references: ids from arguments and files, and their canonical ARVO form.

The batch runs ARVO tasks (its results and report are keyed by the ARVO id); references are
parsed by the one parser of task references (:class:`services.shared.task_ref.TaskRef`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from services.shared.task_ref import TaskRef

ARVO = "arvo"


def read_refs(text: str) -> list[str]:
    """Ids from a split or ids file: whitespace or comma separated, ``#`` starts a comment."""
    refs = []
    for line in text.splitlines():
        refs += [t for t in re.split(r"[\s,]+", line.split("#", 1)[0]) if t]
    return refs


def split_ids(values: Iterable[str]) -> list[str]:
    """Ids from arguments or an ids file (as :func:`read_refs`); order kept, duplicates
    dropped."""
    return list(dict.fromkeys(ref for value in values for ref in read_refs(value)))


def arvo_id(raw: str | int) -> str:
    """The canonical ARVO id of a reference (``arvo:010055`` / ``10055`` → ``10055``).

    Raises ValueError for a reference of another kind or an id that is not a number."""
    try:
        ref = TaskRef.parse(raw)
    except ValueError:
        ref = None
    if ref is None or ref.kind != ARVO or not ref.id.isdigit():
        raise ValueError(
            f"not an ARVO id: {str(raw)[:80]!r} (expected digits, e.g. 10055 or arvo:10055)"
        )
    return ref.id


def canonical_id(raw: str) -> tuple[str, str | None]:
    """(canonical id, None) or (the id as given, why it is not an ARVO id)."""
    try:
        return arvo_id(raw), None
    except ValueError as exc:
        return raw, str(exc)
