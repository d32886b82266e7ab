"""ARVO root-cause analysis tasks: assets from the CyberGym layout, an n132/arvo image, loc.json."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from services.green.config import GreenSettings
from services.green.kinds.arvo.assets import AssetSource, make_asset_source, parse_arvo_id
from services.green.kinds.arvo.datasets.service import ArvoDatasets
from services.green.kinds.arvo.floors import bug_class, floors
from services.green.kinds.arvo.judge import ArvoScore, Judge, PreparedTask
from services.green.kinds.arvo.prompt import describe_task
from services.green.kinds.arvo.report import arvo_position, arvo_report, arvo_sources
from services.green.kinds.arvo.report_signature import report_signature
from services.green.kinds.arvo.scoring.groundtruth import GroundTruth
from services.green.kinds.arvo.scoring.metrics import CONTINUOUS, METRICS
from services.green.kinds.arvo.workspace import WORKSPACE, populate_workspace
from services.green.kinds.datasets import DatasetContext
from services.green.kinds.report import TaskReport
from services.sandbox.base import Sandbox, SandboxProvider, UnreadableFile
from services.shared.loc import LocJson
from services.shared.outcome import TaskOutcome
from services.shared.protocol import RCA_PATHS, RcaTask, TaskAssignment, TaskPaths
from services.shared.scores import aggregate


@dataclass
class ArvoPlan:
    """An ARVO task's plan: a :class:`~services.green.kinds.base.TaskPlan` of a ``loc.json``
    (:class:`LocJson`), an :class:`ArvoScore` and a :class:`GroundTruth`."""

    arvo_id: str
    image: str
    assets: dict[str, Path]
    prepared: PreparedTask
    judge: Judge
    """The kind's one judge."""
    strip_git: bool
    hide_poc: bool
    mask_arvo_id: bool
    paths: TaskPaths = field(default_factory=lambda: RCA_PATHS.model_copy())
    workdir: str = WORKSPACE
    writable: tuple[str, ...] = (WORKSPACE,)

    @property
    def workspace_bytes(self) -> int:
        """What :meth:`populate` copies in (room added to an enforced disk quota)."""
        return self.prepared.workspace_bytes

    @property
    def log_key(self) -> str:
        return f"arvo_{self.arvo_id}"

    async def populate(self, sandbox: Sandbox) -> None:
        """``/workspace/error.txt``, ``/workspace/src-vul/<project>/…``, ``/workspace/shared/``.

        The ground truth (patch.diff) never enters the container.
        """
        await populate_workspace(
            sandbox,
            {"error.txt": self.assets["error.txt"].read_bytes()},
            self.assets["repo-vul.tar.gz"],
            self.prepared.archive_top,
            strip_git=self.strip_git,
            hide_poc=self.hide_poc,
        )

    def wrap(self, command: str) -> str:
        return command

    def describe(self, task: TaskAssignment) -> str:
        return describe_task(
            task, self.prepared.project, None if self.mask_arvo_id else self.arvo_id
        )

    async def read_submission(self, sandbox: Sandbox) -> tuple[LocJson | None, list[str]]:
        path = self.paths.submission
        try:
            raw = await sandbox.read_file(path, max_bytes=1 << 20)
        except FileNotFoundError:
            return None, [f"{path} does not exist; write it first"]
        except UnreadableFile as exc:  # a directory, too large, ... (engine errors: infra)
            return None, [f"could not read {path}: {exc}"]
        return self.prepared.check_submission(raw)

    async def score(self, submission: LocJson | None) -> ArvoScore:
        return await asyncio.to_thread(self._score, submission)  # parses sources: CPU work

    def _score(self, submission: LocJson | None) -> ArvoScore:
        judged = self.judge.score(submission, self.prepared)
        return ArvoScore(
            **dict(judged),
            floors=floors(self.assets["error.txt"], self.prepared, self.judge),
            bug_class=bug_class(self.assets["error.txt"]),
        )

    def ground_truth(self) -> GroundTruth:
        return self.prepared.ground_truth


class ArvoKind:
    name = "arvo"
    assignment = RcaTask
    metrics = METRICS
    """The metrics of its scores, in report order (:class:`services.green.kinds.base.TaskKind`)."""
    continuous = CONTINUOUS
    """Those that are not hit/miss (ours ``iou``, FLBench's six twice: no McNemar test in
    comparisons, no pass@k)."""
    headline = ("file@1", "func@1", "line@1")
    """Those a list or a task page's top shows (:func:`services.green.kinds.metrics.headline`)."""
    public_scores = frozenset({"scorable", "submitted", "n_locations", "bug_class", "project"})
    """Score fields besides the metrics that name nothing of the answer (shown to anyone): the
    project and the bug class are in the crash report the agent reads (``/src/<project>/``);
    the floors are not (they say whether the crash frame is the fix)."""
    record_fields = frozenset({"project", "floors", "bug_class"})
    """Score fields every scored record carries (a client lists a record without one)."""
    asset_signatures: ClassVar[Mapping[str, Callable[[bytes], bytes]]] = {
        "error.txt": report_signature
    }
    """The crash report is compared without its run-to-run details: two builds of one fixture
    recipe, or two runs of one image, report other addresses, pids and seeds."""
    bug_family = "arvo"
    """The bug a task is about is ``arvo:<id>``, whatever question of it a kind asks (locate,
    reproduce, fix): :func:`services.green.kinds.registry.bug_of`."""
    scoring_version = "arvo-loc-2"
    """The version of its scoring rule, recorded in each task's provenance: bump it whenever
    ``docs/scoring.md`` changes what a submission scores (runs of different versions are not
    compared)."""

    def __init__(
        self,
        assets: AssetSource,
        image_template: str,
        *,
        strip_git: bool = True,
        hide_poc: bool = True,
        mask_arvo_id: bool = True,
        judge: Judge | None = None,
    ) -> None:
        self.assets = assets
        self.image_template = image_template
        self.strip_git = strip_git
        self.hide_poc = hide_poc
        self.mask_arvo_id = mask_arvo_id
        self.judge = judge or Judge()

    @staticmethod
    def canonical(ref_id: str) -> str:
        """ARVO ids are decimal numbers (``010055`` -> ``10055``)."""
        return parse_arvo_id(ref_id)

    @classmethod
    def bug(cls, ref_id: str) -> str:
        """The bug a task is about: ``arvo:<id>``, as for the reproduce and fix kinds."""
        return f"{cls.bug_family}:{ref_id}"

    @classmethod
    def from_settings(cls, settings: GreenSettings, sandboxes: SandboxProvider) -> ArvoKind:
        """Always served: the assets come from GREEN_ASSET_SOURCE."""
        assets = make_asset_source(
            settings.asset_source, settings.asset_cache_dir, timeout_s=settings.asset_timeout_s
        )
        return cls(
            assets,
            settings.image_template,
            strip_git=settings.strip_git,
            hide_poc=settings.hide_poc,
            mask_arvo_id=settings.mask_arvo_id,
        )

    def check(self, ref: str) -> None:
        self.assets.fetch(ref, "error.txt")  # small; warms the cache for preparation

    def prepare(self, ref: str) -> ArvoPlan:
        files = {
            name: self.assets.fetch(ref, name)
            for name in ("error.txt", "repo-vul.tar.gz", "patch.diff")
        }
        prepared = self.judge.prepare(files["patch.diff"], files["repo-vul.tar.gz"])
        return ArvoPlan(
            arvo_id=ref,
            image=self.image_template.format(id=ref),
            assets=files,
            prepared=prepared,
            judge=self.judge,
            strip_git=self.strip_git,
            hide_poc=self.hide_poc,
            mask_arvo_id=self.mask_arvo_id,
        )

    def aggregate(self, outcomes: Iterable[TaskOutcome]) -> dict[str, Any]:
        return aggregate(outcomes, METRICS).to_dict()

    def datasets(self, context: DatasetContext) -> ArvoDatasets:
        """List, prefetch, verify and the task images' disk budget (needs a Docker engine)."""
        return ArvoDatasets.build(context, self.assets, self.judge)

    def report(self, ref_id: str) -> TaskReport:
        """``error.txt`` for the dashboard, grouped by its bug class."""
        return arvo_report(self.assets, ref_id)

    def position(self, report: TaskReport, ground_truth: dict[str, Any] | None) -> str:
        return arvo_position(report, ground_truth)

    def sources(self, ref_id: str, paths: frozenset[str]) -> dict[str, bytes]:
        return arvo_sources(self.assets, ref_id, paths)
