"""ARVO task ids: ``10055``, ``"10055"`` and ``"arvo:10055"`` all name the same task.

ARVO's own id rule (decimal digits, at most 12, no leading zeros in the canonical form) over the
one reader of task references (:class:`services.shared.task_ref.TaskRef`)."""

from __future__ import annotations

from services.shared.task_ref import TaskRef

MAX_DIGITS = 12


def parse_arvo_id(value: str | int) -> str:
    """Return the canonical ARVO id: decimal digits, no leading zeros (``"arvo:010055"`` → ``"10055"``).

    Raises ``ValueError`` for anything else (negative numbers, bools, paths, empty strings,
    another kind's reference): the id becomes a path component and a URL segment, so nothing
    but digits gets through.
    """
    try:
        ref = TaskRef.parse(value, default_kind="arvo")
    except ValueError:
        ref = None
    digits = str(value).strip().rpartition(":")[2].strip() if ref is not None else ""
    if ref is None or ref.kind != "arvo" or not ref.id.isdigit() or len(digits) > MAX_DIGITS:
        raise ValueError(f"not an ARVO id: {value!r} (expected digits, e.g. 10055 or arvo:10055)")
    return ref.id
