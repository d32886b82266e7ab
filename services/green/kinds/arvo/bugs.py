"""The bug an ARVO task is about, whichever question of it its kind asks: ``arvo:<id>``.

The locate, reproduce and fix kinds ask of the same bugs, so what is disclosed and who may start
a task is decided per bug (:func:`services.green.kinds.registry.bug_of`): each kind's
:class:`~services.green.kinds.traits.KindTraits` names its ``bug``, which reads the ARVO id out
of the kind's own task id and calls :func:`arvo_bug`.
"""

from __future__ import annotations

BUG_FAMILY = "arvo"


def arvo_bug(arvo_id: str) -> str:
    """The bug every task about ARVO bug ``arvo_id`` is about (``10055`` -> ``arvo:10055``)."""
    return f"{BUG_FAMILY}:{arvo_id}"
