"""ARVO root-cause analysis tasks: assets from the CyberGym layout, an n132/arvo image, loc.json.

A task's id may name one of FLBench's conditions (``arvo:<id>-main``...: :mod:`.conditions`),
which decides what its workspace holds and whether it offers ``run_poc``."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.green.config import GreenSettings
from services.green.kinds.arvo.assets import AssetSource, make_asset_source
from services.green.kinds.arvo.bugs import arvo_bug
from services.green.kinds.arvo.builds.settings import builds_of
from services.green.kinds.arvo.builds.task_builds import TaskBuilds
from services.green.kinds.arvo.conditions import (
    PLAIN,
    POC_FILE,
    Condition,
    canonical_locate_id,
    parse_locate_id,
)
from services.green.kinds.arvo.datasets.service import ArvoDatasets
from services.green.kinds.arvo.floors import bug_class, floors
from services.green.kinds.arvo.judge import ArvoScore, Judge, PreparedTask
from services.green.kinds.arvo.leaks import changed_lines, fix_prints, lines_in_source
from services.green.kinds.arvo.poc.levels import withhold_input
from services.green.kinds.arvo.poc_runs import PocRunner
from services.green.kinds.arvo.prompt import describe_task
from services.green.kinds.arvo.report import arvo_position, arvo_report, arvo_sources
from services.green.kinds.arvo.report_signature import report_signature
from services.green.kinds.arvo.scoring.groundtruth import GroundTruth
from services.green.kinds.arvo.scoring.metrics import CONTINUOUS, METRICS
from services.green.kinds.arvo.workspace import WORKSPACE, populate_workspace, withdraw
from services.green.kinds.datasets import DatasetContext
from services.green.kinds.report import TaskReport
from services.green.kinds.traits import KindTraits
from services.sandbox.base import Sandbox, SandboxProvider, UnreadableFile
from services.shared.audit import find_leaks, flat
from services.shared.commands import CommandResult
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
    condition: Condition = PLAIN
    poc: bytes | None = None
    """The task's crashing input, where the condition grants the file or offers ``run_poc``
    (never sent to the agent otherwise)."""
    poc_runner: PocRunner | None = None
    """Serves ``run_poc`` where the condition offers it."""
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

        The ground truth (patch.diff) never enters the container; a condition
        (:mod:`.conditions`) decides what else does: the report, the source, ``/workspace/poc``.
        """
        c = self.condition
        files: dict[str, bytes] = {}
        if c.report:
            report = self.assets["error.txt"].read_bytes()
            if c.flbench and not c.poc_file:  # the input's bytes and hashes stay green's
                report = withhold_input(report.decode("utf-8", "replace"), self.poc).encode()
            files["error.txt"] = report
        if c.poc_file and self.poc is not None:
            files[POC_FILE.removeprefix(f"{WORKSPACE}/")] = self.poc
        await populate_workspace(
            sandbox,
            files,
            self.assets["repo-vul.tar.gz"] if c.source else None,
            self.prepared.archive_top,
            strip_git=self.strip_git,
            hide_poc=self.hide_poc or c.flbench,
        )
        if c.flbench:
            await withdraw(sandbox, source=not c.source, reproducer=True)

    def wrap(self, command: str) -> str:
        return command

    def describe(self, task: TaskAssignment) -> str:
        return describe_task(
            task,
            self.prepared.project,
            None if self.mask_arvo_id else self.arvo_id,
            condition=self.condition,
        )

    @property
    def offers(self) -> tuple[str, ...]:
        """The agent-plane verbs beyond execute and submit that this task serves."""
        return ("run_poc",) if self.poc_runner is not None else ()

    async def run_poc(self, task_id: str) -> CommandResult:
        """``run_poc``: the vulnerable target on the task's PoC, in a judging container of
        green's own (:class:`PocRunner`). Only a plan whose condition offers it has a runner."""
        assert self.poc_runner is not None
        return await self.poc_runner.run(task_id)

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

    def leaks(self, channels: Mapping[str, str]) -> list[str]:
        """The leak audit (blocking): the evidence that the agent's ``channels`` hold the fix
        (:mod:`.leaks`)."""
        patch = self.assets["patch.diff"].read_bytes()
        prints = fix_prints(patch, self.arvo_id, source_given=self.condition.source)
        return find_leaks(channels, prints, self._given)

    def _given(self, lines: set[str]) -> set[str]:
        """Of ``lines``, those the agent was given: in the vulnerable source (the lines the
        fix removes are not, where the condition withholds the source)."""
        found = lines_in_source(self.assets["repo-vul.tar.gz"], lines)
        if not self.condition.source:
            _, removed = changed_lines(self.assets["patch.diff"].read_text(errors="replace"))
            found -= {flat(r) for r in removed}
        return found


def locate_bug(ref_id: str) -> str:
    """The bug a locate task is about, whatever its condition (``10055-main`` -> ``arvo:10055``)."""
    return arvo_bug(parse_locate_id(ref_id)[0])


class ArvoKind:
    name = "arvo"
    assignment = RcaTask
    traits = KindTraits(
        metrics=METRICS,
        # not hit/miss: ours ``iou``, FLBench's six twice (no McNemar test, no pass@k)
        continuous=CONTINUOUS,
        headline=("file@1", "func@1", "line@1"),
        # the project and the bug class are in the crash report the agent reads
        # (``/src/<project>/``); the floors are not (they say whether the crash frame is the fix)
        public_scores=frozenset({"scorable", "submitted", "n_locations", "bug_class", "project"}),
        record_fields=frozenset({"project", "floors", "bug_class"}),
        # the PoC's hash is shown only with the ground truth (a condition may withhold its bytes)
        secret_assets=frozenset({"poc"}),
        # two builds of one fixture recipe, or two runs of one image, report other addresses,
        # pids and seeds: the crash report is compared without them
        asset_signatures={"error.txt": report_signature},
        scoring_version="arvo-loc-2",
        bug=locate_bug,
    )
    """What it declares of itself (:class:`~services.green.kinds.traits.KindTraits`)."""

    def __init__(
        self,
        assets: AssetSource,
        image_template: str,
        *,
        strip_git: bool = True,
        hide_poc: bool = True,
        mask_arvo_id: bool = True,
        judge: Judge | None = None,
        builds: Callable[[str, Path, PreparedTask], TaskBuilds] | None = None,
    ) -> None:
        """``builds``: a task's builds (``run_poc`` runs its vulnerable one); without it, the
        conditions that offer ``run_poc`` are refused."""
        self.assets = assets
        self.builds = builds
        self.image_template = image_template
        self.strip_git = strip_git
        self.hide_poc = hide_poc
        self.mask_arvo_id = mask_arvo_id
        self.judge = judge or Judge()

    @staticmethod
    def canonical(ref_id: str) -> str:
        """ARVO ids are decimal numbers (``010055`` -> ``10055``), optionally with a condition
        (``10055-main``: :mod:`.conditions`)."""
        return canonical_locate_id(ref_id)

    @staticmethod
    def arvo_id(ref_id: str) -> str:
        """The ARVO id of one of the kind's ids (its condition dropped)."""
        return parse_locate_id(ref_id)[0]

    @classmethod
    def from_settings(cls, settings: GreenSettings, sandboxes: SandboxProvider) -> ArvoKind:
        """Always served: the assets come from GREEN_ASSET_SOURCE."""
        assets = make_asset_source(
            settings.asset_source, settings.asset_cache_dir, timeout_s=settings.asset_timeout_s
        )
        locks: defaultdict[str, asyncio.Lock] = defaultdict(asyncio.Lock)

        def builds(arvo_id: str, patch: Path, prepared: PreparedTask) -> TaskBuilds:
            return builds_of(settings, sandboxes, arvo_id, patch, prepared, locks)

        return cls(
            assets,
            settings.image_template,
            strip_git=settings.strip_git,
            hide_poc=settings.hide_poc,
            mask_arvo_id=settings.mask_arvo_id,
            builds=builds,
        )

    def check(self, ref: str) -> None:
        self.assets.fetch(self.arvo_id(ref), "error.txt")  # small; warms the cache

    def prepare(self, ref: str) -> ArvoPlan:
        arvo_id, condition = parse_locate_id(ref)
        names = ["error.txt", "repo-vul.tar.gz", "patch.diff"]
        if condition.poc_file or condition.run_poc or (condition.report and condition.flbench):
            names.append("poc")  # to hand it over, to run it, or to withhold it
        files = {name: self.assets.fetch(arvo_id, name) for name in names}  # type: ignore[arg-type]
        prepared = self.judge.prepare(files["patch.diff"], files["repo-vul.tar.gz"])
        poc = files["poc"].read_bytes() if "poc" in files else None
        runner = None
        if condition.run_poc:
            if self.builds is None or poc is None:
                raise ValueError(f"arvo:{ref}: this green cannot run a PoC (no judging builds)")
            runner = PocRunner(self.builds(arvo_id, files["patch.diff"], prepared), poc, condition)
        return ArvoPlan(
            arvo_id=arvo_id,
            image=self.image_template.format(id=arvo_id),
            assets=files,
            prepared=prepared,
            judge=self.judge,
            strip_git=self.strip_git,
            hide_poc=self.hide_poc,
            mask_arvo_id=self.mask_arvo_id,
            condition=condition,
            poc=poc,
            poc_runner=runner,
            paths=paths_of(condition),
        )

    def aggregate(self, outcomes: Iterable[TaskOutcome]) -> dict[str, Any]:
        return aggregate(outcomes, METRICS).to_dict()

    def datasets(self, context: DatasetContext) -> ArvoDatasets:
        """List, prefetch, verify and the task images' disk budget (needs a Docker engine)."""
        return ArvoDatasets.build(context, self.assets, self.judge)

    def report(self, ref_id: str) -> TaskReport:
        """``error.txt`` for the dashboard, grouped by its bug class (the operator's, whatever
        the agent got)."""
        return arvo_report(self.assets, self.arvo_id(ref_id))

    def position(self, report: TaskReport, ground_truth: dict[str, Any] | None) -> str:
        return arvo_position(report, ground_truth)

    def sources(self, ref_id: str, paths: frozenset[str]) -> dict[str, bytes]:
        return arvo_sources(self.assets, self.arvo_id(ref_id), paths)


def paths_of(condition: Condition) -> TaskPaths:
    """Where things are in a task of ``condition``: what it does not grant is left empty."""
    return RCA_PATHS.model_copy(
        update={
            "source_dir": RCA_PATHS.source_dir if condition.source else "",
            "error_report": RCA_PATHS.error_report if condition.report else "",
            "poc": POC_FILE if condition.poc_file else "",
        }
    )
