"""The batch's task references: from arguments, ids files and splits, read by the one parser.

A reference is ``kind:id`` (``arvo:10055``, ``swebench:django__django-11099``), read by
:class:`services.shared.task_ref.TaskRef` with its kind-neutral syntax (letters, digits,
``_ . -``; an all-digit id without leading zeros). A bare id belongs to the default kind
(``10055`` is ``arvo:10055``): a convenience kept for the ARVO runs written that way.

The client does not know a kind's own id rules (it cannot import green): green checks a
reference when the task is created, refuses an unknown kind or a bad id (recorded as
``rejected``), and the ``ref`` of its answer is the canonical reference the run records.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from services.shared.task_ref import TaskRef


def read_refs(text: str) -> list[str]:
    """References from a split or ids file: whitespace or comma separated, ``#`` starts a
    comment."""
    refs = []
    for line in text.splitlines():
        refs += [t for t in re.split(r"[\s,]+", line.split("#", 1)[0]) if t]
    return refs


def split_refs(values: Iterable[str]) -> list[str]:
    """References from arguments or an ids file (as :func:`read_refs`); order kept, duplicates
    dropped."""
    return list(dict.fromkeys(ref for value in values for ref in read_refs(value)))


def task_ref(raw: str | int | TaskRef) -> TaskRef:
    """The reference as the client reads it (``10055`` / ``arvo:010055`` -> ``arvo:10055``).
    ValueError, with a sentence, for what is not a reference."""
    return TaskRef.parse(raw)


def task_refs(values: Iterable[str]) -> tuple[list[TaskRef], list[str]]:
    """The references of ``values`` (order kept, duplicates dropped) and one sentence per
    value that is not a reference."""
    refs: dict[TaskRef, None] = {}
    bad = []
    for raw in values:
        try:
            refs.setdefault(task_ref(raw), None)
        except ValueError as exc:
            bad.append(str(exc))
    return list(refs), bad
