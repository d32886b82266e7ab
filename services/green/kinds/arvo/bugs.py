"""The bug an ARVO task is about, whichever question of it its kind asks: ``arvo:<id>``.

The locate, reproduce and fix kinds ask of the same bugs, so what is disclosed and who may start
a task is decided per bug (:func:`services.green.kinds.registry.bug_of`): each kind's
:class:`~services.green.kinds.traits.KindTraits` names its function here.
"""

from __future__ import annotations

from services.green.kinds.arvo.conditions import parse_locate_id
from services.green.kinds.arvo.poc.levels import parse_poc_id

BUG_FAMILY = "arvo"


def locate_bug(ref_id: str) -> str:
    """A locate task's bug, whatever its condition (``10055-main`` -> ``arvo:10055``)."""
    return f"{BUG_FAMILY}:{parse_locate_id(ref_id)[0]}"


def reproduce_bug(ref_id: str) -> str:
    """A reproduce task's bug, whatever its help level (``10055-l2`` -> ``arvo:10055``)."""
    return f"{BUG_FAMILY}:{parse_poc_id(ref_id)[0]}"


def fix_bug(ref_id: str) -> str:
    """A fix task's bug (its id is the ARVO id)."""
    return f"{BUG_FAMILY}:{ref_id}"
