"""What green reads of the kinds' metrics and scores: each kind's :class:`KindTraits`, read
directly, combined over several kinds and with what a kind leaves undeclared.

A kind that declares nothing (``KindTraits()``) still works; its scores are then shown only with
the ground truth. An unknown kind (a row left by a kind this green no longer serves) is read as
one that declares nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from services.green.kinds.traits import KindTraits


class Declares(Protocol):
    """A kind, or a registered kind's class: what green reads here is its ``traits``."""

    traits: KindTraits


def declared_metrics(kinds: Iterable[Declares]) -> list[str] | None:
    """The metrics the kinds declare, in order (None when none declares any)."""
    names = [m for k in kinds for m in k.traits.metrics]
    return list(dict.fromkeys(names)) or None


def headline_metrics(kind: Declares | None) -> list[str] | None:
    """The metrics a list shows for a kind's tasks: its ``headline``, else every metric it
    declares (None when it declares none: the caller takes what the records hold)."""
    if kind is None:
        return None
    names = kind.traits.headline or kind.traits.metrics
    return list(names) if names else None


def continuous_metrics(kinds: Iterable[Declares]) -> set[str] | None:
    """The metrics the kinds declare continuous (None when none says)."""
    sets = [c for k in kinds if (c := k.traits.continuous) is not None]
    return set().union(*sets) if sets else None


def public_score_keys(kind: Declares | None) -> frozenset[str]:
    """The score fields of a kind's tasks shown to a caller who may not see the ground truth:
    its declared metrics and ``public_scores`` (none for an unknown kind or one that declares
    nothing: what a kind has not declared harmless is not shown)."""
    if kind is None:
        return frozenset()
    return frozenset(kind.traits.metrics) | kind.traits.public_scores


def secret_asset_names(kind: Declares | None) -> frozenset[str]:
    """The assets of a kind's tasks whose hashes only the ground truth's reader may see."""
    return kind.traits.secret_assets if kind is not None else frozenset()


def asset_signatures(kind: Declares | None) -> Mapping[str, Callable[[bytes], bytes]]:
    """The assets of a kind's tasks compared by a signature, each with its function (none
    when the kind declares none: they are compared byte for byte)."""
    return kind.traits.asset_signatures if kind is not None else {}


def record_fields(kind: Declares) -> list[str] | None:
    """The score fields besides the metrics that every scored record of the kind carries
    (None when it does not say)."""
    fields = kind.traits.record_fields
    return sorted(fields) if fields is not None else None
