"""What the ARVO kinds judged on builds (reproduce, fix) share: ARVO's assets and images, the
task's builds, its crash report, the dataset tools and the dashboard's report."""

from __future__ import annotations

import asyncio
import tarfile
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, ClassVar, Self

from services.green.config import GreenSettings
from services.green.kinds.arvo.assets import AssetError, AssetSource, make_asset_source
from services.green.kinds.arvo.builds.datasets import BuildDatasets, BuildInputs
from services.green.kinds.arvo.builds.settings import builds_of
from services.green.kinds.arvo.builds.task_builds import TaskBuilds
from services.green.kinds.arvo.datasets.service import ArvoDatasets
from services.green.kinds.arvo.judge import Judge, PreparedTask
from services.green.kinds.arvo.report import arvo_position, arvo_report, arvo_sources
from services.green.kinds.arvo.report_signature import report_signature
from services.green.kinds.datasets import DatasetContext
from services.green.kinds.report import TaskReport
from services.green.kinds.traits import KindTraits
from services.sandbox.base import SandboxProvider
from services.shared.outcome import TaskOutcome
from services.shared.scores import aggregate

CORPUS = "corpus.tar.gz"
"""The behaviour corpus asset: a gzip tar of inputs (the bundled fixtures have one)."""
CANARY = "canary"
"""An input that crashes both the vulnerable and the fixed build in another bug (the bundled
fixtures have one): the fix judge checks that a patched build still reports it."""
MAX_CORPUS_INPUTS = 64
MAX_CORPUS_BYTES = 16 << 20


def read_corpus(path: Path | None) -> dict[str, bytes]:
    """The behaviour corpus: the regular files of ``corpus.tar.gz`` by name (bounded)."""
    if path is None:
        return {}
    out: dict[str, bytes] = {}
    with tarfile.open(path) as tar:
        for member in tar:
            if member.isfile() and len(out) < MAX_CORPUS_INPUTS and member.size <= MAX_CORPUS_BYTES:
                data = tar.extractfile(member)
                if data is not None:
                    out[member.name.rsplit("/", 1)[-1]] = data.read()
    return dict(sorted(out.items()))


def build_judged_traits(
    metrics: tuple[str, ...],
    *,
    public_scores: frozenset[str],
    secret_assets: frozenset[str],
    scoring_version: str,
    bug: Callable[[str], str],
) -> KindTraits:
    """The traits of a kind judged on the task's builds: hit/miss metrics only, and the crash
    report compared without its run-to-run details (its addresses, pid...)."""
    return KindTraits(
        metrics=metrics,
        continuous=frozenset(),
        public_scores=public_scores,
        secret_assets=secret_assets,
        asset_signatures={"error.txt": report_signature},
        scoring_version=scoring_version,
        bug=bug,
    )


class BuildJudgedKind:
    """The base of :class:`~services.green.kinds.arvo.poc.kind.ArvoPocKind` and
    :class:`~services.green.kinds.arvo.fix.kind.ArvoFixKind`."""

    traits: ClassVar[KindTraits]
    """Each kind's own (:func:`build_judged_traits`)."""

    def __init__(self, assets: AssetSource, settings: GreenSettings, sandboxes: SandboxProvider):
        self.assets = assets
        self.settings = settings
        self.sandboxes = sandboxes
        self.judge = Judge()
        self.locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        """One per fallback fixed build: two tasks of a bug build it once."""

    @classmethod
    def from_settings(cls, settings: GreenSettings, sandboxes: SandboxProvider) -> Self:
        """Served with the ARVO kind: the same assets (GREEN_ASSET_SOURCE) and images."""
        assets = make_asset_source(
            settings.asset_source, settings.asset_cache_dir, timeout_s=settings.asset_timeout_s
        )
        return cls(assets, settings, sandboxes)

    @staticmethod
    def arvo_id(ref_id: str) -> str:
        """The ARVO id of one of the kind's ids."""
        return ref_id

    def check(self, ref: str) -> None:
        self.assets.fetch(self.arvo_id(ref), "error.txt")

    def optional(self, arvo_id: str, name: str) -> Path | None:
        """An asset the dataset may not have (the corpus, the description)."""
        try:
            return self.assets.fetch(arvo_id, name)  # type: ignore[arg-type]
        except AssetError:
            return None

    def fetch(self, arvo_id: str, *names: str) -> dict[str, Path]:
        return {n: self.assets.fetch(arvo_id, n) for n in names}  # type: ignore[arg-type]

    def task_builds(self, arvo_id: str, patch: Path, prepared: PreparedTask) -> TaskBuilds:
        return builds_of(self.settings, self.sandboxes, arvo_id, patch, prepared, self.locks)

    def build_inputs(self, arvo_id: str) -> BuildInputs:
        """What the dataset tools' build checks need of one task (blocking)."""
        files = self.fetch(arvo_id, "error.txt", "repo-vul.tar.gz", "patch.diff", "poc")
        prepared = self.judge.prepare(files["patch.diff"], files["repo-vul.tar.gz"])
        return BuildInputs(
            builds=self.task_builds(arvo_id, files["patch.diff"], prepared),
            poc=files["poc"].read_bytes(),
            corpus=read_corpus(self.optional(arvo_id, CORPUS)),
            error_text=files["error.txt"].read_text(errors="replace"),
        )

    def aggregate(self, outcomes: Iterable[TaskOutcome]) -> dict[str, Any]:
        return aggregate(outcomes, self.traits.metrics).to_dict()

    def datasets(self, context: DatasetContext) -> BuildDatasets:
        """ARVO's dataset tools, and a verification of the builds the kind judges on."""
        arvo = ArvoDatasets.build(context, self.assets, self.judge)
        return BuildDatasets(arvo, self.arvo_id, self.build_inputs)

    def report(self, ref_id: str) -> TaskReport:
        """The task's crash report for the dashboard (the operator's, whatever the agent got)."""
        return arvo_report(self.assets, self.arvo_id(ref_id))

    def position(self, report: TaskReport, ground_truth: dict[str, Any] | None) -> str:
        return arvo_position(report, None)

    def sources(self, ref_id: str, paths: frozenset[str]) -> dict[str, bytes]:
        return arvo_sources(self.assets, self.arvo_id(ref_id), paths)
