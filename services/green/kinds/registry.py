"""The task kinds green knows, by name: one registration line per kind, and the one way to read a
task reference (``arvo:10055``) into a checked :class:`TaskRef`."""

from __future__ import annotations

from typing import Annotated

from pydantic import PlainSerializer, PlainValidator, WithJsonSchema

from services.green.config import GreenSettings
from services.green.kinds.arvo import ArvoFixKind, ArvoKind, ArvoPocKind
from services.green.kinds.base import KindClass, TaskKind
from services.green.kinds.swebench import SweBenchKind
from services.sandbox.base import SandboxProvider
from services.shared.task_ref import TaskRef

KINDS: dict[str, KindClass] = {
    ArvoKind.name: ArvoKind,
    ArvoPocKind.name: ArvoPocKind,
    ArvoFixKind.name: ArvoFixKind,
    SweBenchKind.name: SweBenchKind,
}
"""Every kind green can host, by the prefix of its references. A new kind adds one line here."""


def build_kinds(settings: GreenSettings, sandboxes: SandboxProvider) -> dict[str, TaskKind]:
    """The kinds this green serves: each registered kind its settings enable."""
    built = {name: cls.from_settings(settings, sandboxes) for name, cls in KINDS.items()}
    return {name: kind for name, kind in built.items() if kind is not None}


def bug_of(kind: str, ref_id: str) -> str:
    """The bug a task is about, the same for every kind that asks a question of it: ``arvo:10055``
    for ``arvo:10055``, ``arvo-poc:10055-l2`` and ``arvo-fix:10055`` (its kind's ``traits.bug``);
    else the task reference itself. What is disclosed, and who may start a task, is decided per
    bug (``green/edge/disclosure.py``, ``green/edge/intake_limits.py``): a finished task of one kind must
    not answer a running task of another kind on the same bug."""
    cls = KINDS.get(kind)
    bug = cls.traits.bug if cls is not None else None
    return bug(ref_id) if bug is not None else f"{kind}:{ref_id}"


def parse_ref(value: str | int | TaskRef) -> TaskRef:
    """A task reference, checked by its kind: ``"arvo:010055"`` / ``10055`` -> ``arvo:10055``.

    ValueError, with a sentence, for bad syntax, an unknown kind or an id the kind rejects.
    """
    ref = TaskRef.parse(value)
    cls = KINDS.get(ref.kind)
    if cls is None:
        raise ValueError(f"unknown task kind {ref.kind!r} in {ref} (known: {', '.join(KINDS)})")
    return TaskRef(ref.kind, cls.canonical(ref.id))


CheckedRef = Annotated[
    TaskRef,
    PlainValidator(parse_ref),
    PlainSerializer(str, return_type=str),
    WithJsonSchema({"type": "string", "examples": ["arvo:10055"]}),
]
"""A request model's task reference: read by :func:`parse_ref` when the request is (so a bad one
is a 422 with its sentence), a :class:`TaskRef` from then on, ``"kind:id"`` in JSON."""
