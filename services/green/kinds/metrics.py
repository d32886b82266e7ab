"""What a kind says of its metrics: two optional class attributes, read here.

- ``metrics``: its metric names in report order (ARVO: ``file@1`` ... ``iou``; SWE-bench:
  ``resolved``); without it, the names found in its score records
  (:func:`services.shared.scores.metric_names`);
- ``headline``: those of them a list, a run's row and the top of a task page show (ARVO's
  locate kind: ``file@1 func@1 line@1``); without it, every metric it declares;
- ``continuous``: those of them that are not hit/miss (ARVO: ``iou``): no McNemar test in a
  comparison; without it, a metric whose every recorded value is 0 or 1 is hit/miss;
- ``public_scores``: the other score fields that say how well the agent did without saying what
  the right answer was (ARVO: ``scorable``, ``n_locations``...). A caller who may not see the
  ground truth sees a task's metrics and these, nothing else (:mod:`services.green.disclosure`).

- ``secret_assets``: the assets whose hashes a task's provenance shows only with its ground
  truth (ARVO's reproduce and fix kinds: ``patch.diff``, the PoC).
- ``asset_signatures``: per asset that is a run's output (ARVO's ``error.txt``, a sanitizer
  report), the function that blanks what differs between two runs of the same build: a task's
  provenance records the signature's sha256 beside the file's, and runs are compared on it.
- ``record_fields``: the other score fields every scored record of the kind carries (ARVO:
  ``project``, ``floors``, ``bug_class``): the ``arena`` client lists a record without one of
  them as incomplete, with the reason (``GET /kinds``).

(A kind's ``scoring_version``, recorded in each task's provenance, is a class attribute too.)

A kind that declares none of them still works (the third-kind test's needle kind does not); its
scores are then shown only with the ground truth.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping


def declared_metrics(kinds: Iterable[object]) -> list[str] | None:
    """The metrics the kinds declare, in order (None when none declares any)."""
    names = [m for k in kinds for m in (getattr(k, "metrics", None) or ())]
    return list(dict.fromkeys(names)) or None


def headline_metrics(kind: object | None) -> list[str] | None:
    """The metrics a list shows for a kind's tasks: its ``headline``, else every metric it
    declares (None when it declares none: the caller takes what the records hold)."""
    names = getattr(kind, "headline", None) or getattr(kind, "metrics", None)
    return list(names) if names else None


def continuous_metrics(kinds: Iterable[object]) -> set[str] | None:
    """The metrics the kinds declare continuous (None when none says)."""
    sets = [c for k in kinds if (c := getattr(k, "continuous", None)) is not None]
    return set().union(*sets) if sets else None


def public_score_keys(kind: object | None) -> frozenset[str]:
    """The score fields of a kind's tasks shown to a caller who may not see the ground truth:
    its declared metrics and ``public_scores`` (none for an unknown kind or one that declares
    nothing: what a kind has not declared harmless is not shown)."""
    if kind is None:
        return frozenset()
    metrics = getattr(kind, "metrics", None) or ()
    return frozenset(metrics) | frozenset(getattr(kind, "public_scores", None) or ())


def secret_asset_names(kind: object | None) -> frozenset[str]:
    """The assets of a kind's tasks whose hashes only the ground truth's reader may see."""
    return frozenset(getattr(kind, "secret_assets", None) or ())


def asset_signatures(kind: object | None) -> Mapping[str, Callable[[bytes], bytes]]:
    """The assets of a kind's tasks compared by a signature, each with its function (none
    when the kind declares none: they are compared byte for byte)."""
    return getattr(kind, "asset_signatures", None) or {}


def record_fields(kind: object) -> list[str] | None:
    """The score fields besides the metrics that every scored record of the kind carries
    (None when it does not say)."""
    fields = getattr(kind, "record_fields", None)
    return sorted(fields) if fields is not None else None
