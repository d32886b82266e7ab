"""What a task kind declares of itself, in one typed record: :class:`KindTraits`.

Every kind holds one as its class attribute ``traits`` (:class:`~services.green.kinds.base.TaskKind`);
green reads it directly (:mod:`services.green.kinds.metrics`, the disclosure, a task's provenance,
the bug a task is about). A field a kind leaves at its default declares nothing: its scores are
then shown only with the ground truth, and its records are read as they come.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class KindTraits:
    """A kind's metrics, what of its scores and assets anyone may see, and how it is versioned."""

    metrics: tuple[str, ...] = ()
    """Its metric names in report order (ARVO: ``file@1`` ... ``iou``; SWE-bench: ``resolved``);
    none: the names found in its score records (:func:`services.shared.scores.metric_names`)."""
    headline: tuple[str, ...] = ()
    """Those of them a list, a run's row and the top of a task page show (ARVO's locate kind:
    ``file@1 func@1 line@1``); none: every metric it declares."""
    continuous: frozenset[str] | None = None
    """Those of them that are not hit/miss (ARVO: ``iou``): no McNemar test in a comparison, no
    pass@k; None (it does not say): a metric whose every recorded value is 0 or 1 is hit/miss."""
    public_scores: frozenset[str] = frozenset()
    """The other score fields that say how well the agent did without saying what the right
    answer was (ARVO: ``scorable``, ``n_locations``...). A caller who may not see the ground
    truth sees a task's metrics and these, nothing else (:mod:`services.green.edge.disclosure`)."""
    secret_assets: frozenset[str] = frozenset()
    """The assets whose hashes a task's provenance shows only with its ground truth (ARVO's
    reproduce and fix kinds: ``patch.diff``, the PoC)."""
    asset_signatures: Mapping[str, Callable[[bytes], bytes]] = field(default_factory=dict)
    """Per asset that is a run's output (ARVO's ``error.txt``, a sanitizer report), the function
    that blanks what differs between two runs of the same build: a task's provenance records the
    signature's sha256 beside the file's, and runs are compared on it."""
    record_fields: frozenset[str] | None = None
    """The other score fields every scored record of the kind carries (ARVO: ``project``,
    ``floors``, ``bug_class``): the ``arena`` client lists a record without one of them as
    incomplete, with the reason (``GET /kinds``); None: it does not say."""
    scoring_version: str | None = None
    """The version of its scoring rule, recorded in each task's provenance: bumped whenever
    ``docs/scoring.md`` changes what a submission scores (runs of different versions are not
    compared)."""
    bug: Callable[[str], str] | None = None
    """The bug one of its tasks is about, from the task's id within the kind, when several kinds
    ask questions of the same bugs (ARVO's three: ``10055-l2`` -> ``arvo:10055``); None: each
    task's reference is its own bug (:func:`services.green.kinds.registry.bug_of`)."""
