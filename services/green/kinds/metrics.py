"""What a kind says of its metrics: two optional class attributes, read here.

- ``metrics``: its metric names in report order (ARVO: ``file@1`` ... ``iou``; SWE-bench:
  ``resolved``); without it, the names found in its score records
  (:func:`services.shared.scores.metric_names`);
- ``continuous``: those of them that are not hit/miss (ARVO: ``iou``): no McNemar test in a
  comparison; without it, a metric whose every recorded value is 0 or 1 is hit/miss.

A kind that declares neither still works (the third-kind test's needle kind does not).
"""

from __future__ import annotations

from collections.abc import Iterable


def declared_metrics(kinds: Iterable[object]) -> list[str] | None:
    """The metrics the kinds declare, in order (None when none declares any)."""
    names = [m for k in kinds for m in (getattr(k, "metrics", None) or ())]
    return list(dict.fromkeys(names)) or None


def continuous_metrics(kinds: Iterable[object]) -> set[str] | None:
    """The metrics the kinds declare continuous (None when none says)."""
    sets = [c for k in kinds if (c := getattr(k, "continuous", None)) is not None]
    return set().union(*sets) if sets else None
