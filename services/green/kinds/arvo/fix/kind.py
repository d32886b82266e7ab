"""ARVO fix tasks (``arvo-fix:<id>``, as AutoPatchBench asks of ARVO's bugs): a patch that
builds, stops the crash and keeps the program's behaviour.

The agent gets what a locate task gives (the crash report, the source tree) and edits the tree
in place; at ``submit`` green reads the tree out through the engine and diffs it against the
pristine tree itself (:mod:`.patches`), and the judge (:mod:`.judge`) applies that diff in a
fresh container of the task image with green's own applier. The task's PoC and the fix never enter the agent's container.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.green.kinds.arvo.assets import AssetError, check_archive, parse_arvo_id
from services.green.kinds.arvo.bugs import arvo_bug
from services.green.kinds.arvo.builds.kind import (
    CANARY,
    CORPUS,
    BuildJudgedKind,
    build_judged_traits,
    read_corpus,
)
from services.green.kinds.arvo.builds.task_builds import TaskBuilds
from services.green.kinds.arvo.crash import crash_frames, fuzz_target
from services.green.kinds.arvo.fix.judge import (
    METRICS,
    FixPatch,
    FixScore,
    FixTruth,
    delete_line_patch,
    judge_patch,
)
from services.green.kinds.arvo.fix.patches import baseline_script, patch_problems, take_patch
from services.green.kinds.arvo.fix.prompt import describe_fix_task
from services.green.kinds.arvo.judge import PreparedTask
from services.green.kinds.arvo.workspace import WORKSPACE, populate_workspace, project_dir
from services.sandbox.base import Sandbox, SandboxError, UnreadableFile
from services.shared.logging import get_logger
from services.shared.protocol import FixTask, TaskAssignment, TaskPaths

log = get_logger("services.green.kinds.arvo.fix")


@dataclass
class FixPlan:
    """A fix task's plan: a :class:`~services.green.kinds.base.TaskPlan` of a :class:`FixPatch`,
    a :class:`FixScore` and a :class:`FixTruth`."""

    arvo_id: str
    image: str
    assets: dict[str, Path]
    prepared: PreparedTask
    builds: TaskBuilds
    truth: FixTruth
    poc: bytes
    corpus: dict[str, bytes]
    harness: str | None
    """The fuzz harness's project path (from the crash report): refused in a patch."""
    floor_patch: str | None
    """The crash-frame floor's patch (None: no floor is judged)."""
    floors: dict[str, dict[str, float]]
    """The kind's floors of this task, judged once (shared by its plans)."""
    fix_patch: str
    """``patch.diff`` (the constructs it adds are allowed in a patch)."""
    canary: bytes | None
    """An input that crashes both builds in another bug (the ``canary`` asset; None: none)."""
    strip_git: bool
    hide_poc: bool
    mask_arvo_id: bool
    paths: TaskPaths = field(default_factory=lambda: TaskPaths(workspace=WORKSPACE))
    workdir: str = WORKSPACE
    writable: tuple[str, ...] = ()
    """What the agent may write: /workspace/shared, the source tree, and /src/<project> and
    /out to try a build (the sandbox makes the rest read-only to it)."""
    task_id: str = ""

    @property
    def workspace_bytes(self) -> int:
        return self.prepared.workspace_bytes * 2  # the tree and its baseline's objects

    @property
    def log_key(self) -> str:
        return f"arvo-fix_{self.arvo_id}"

    async def populate(self, sandbox: Sandbox) -> None:
        await populate_workspace(
            sandbox,
            {"error.txt": self.assets["error.txt"].read_bytes()},
            self.assets["repo-vul.tar.gz"],
            self.prepared.archive_top,
            strip_git=self.strip_git,
            hide_poc=self.hide_poc,
        )
        result = await sandbox.exec(baseline_script(self.paths.source_dir), 300)
        if result.exit_code != 0:  # a convenience for the agent: green never reads it
            log.warning("fix.baseline_failed", output=result.output[-300:])

    def wrap(self, command: str) -> str:
        return command

    def describe(self, task: TaskAssignment) -> str:
        self.task_id = task.task_id
        return describe_fix_task(
            task,
            source=self.paths.source_dir,
            project=self.prepared.project,
            arvo_id=None if self.mask_arvo_id else self.arvo_id,
        )

    async def read_submission(self, sandbox: Sandbox) -> tuple[FixPatch | None, list[str]]:
        source = self.paths.source_dir
        bound = self.prepared.workspace_bytes * 4 + (256 << 20)
        try:
            taken = await take_patch(
                sandbox, source, self.assets["repo-vul.tar.gz"], self.prepared.archive_top, bound
            )
        except (UnreadableFile, FileNotFoundError) as exc:  # what the agent left
            return None, [f"could not take the patch out of {source}: {exc}"]
        if not (taken.patch.strip() or taken.binary or taken.odd):
            return None, [f"{source} has no changes: edit the source code, then submit"]
        problems = patch_problems(taken, self.harness, self.fix_patch)
        if problems:
            return None, problems
        return FixPatch(patch=taken.patch, files=taken.files), []

    async def score(self, submission: FixPatch | None) -> FixScore:
        if submission is None:
            return FixScore(explanation=["no patch was submitted"], floors=self.floors)
        score = await self._judge(submission.patch)
        score.patch_files = submission.files
        score.floors = await self._floors()
        return score

    async def _judge(self, patch: str) -> FixScore:
        return await judge_patch(
            patch,
            self.builds,
            poc=self.poc,
            corpus=self.corpus,
            fuzz_target=self.truth.fuzz_target,
            task_id=self.task_id or "arvo-fix",
            canary=self.canary,
        )

    async def _floors(self) -> dict[str, dict[str, float]]:
        """The empty patch's metrics (0) and the crash-frame floor's, judged once per task and
        green; a floor that cannot be judged is left out (it never fails the task)."""
        if self.floor_patch is not None and "crash_frame" not in self.floors:
            try:
                floor = await self._judge(self.floor_patch)
            except (SandboxError, AssetError, RuntimeError) as exc:
                log.warning("fix.floor_failed", error=str(exc))
                return self.floors
            self.floors["crash_frame"] = floor.metrics()
        return self.floors

    def ground_truth(self) -> FixTruth:
        return self.truth


class ArvoFixKind(BuildJudgedKind):
    name = "arvo-fix"
    assignment = FixTask
    traits = build_judged_traits(
        METRICS,
        # the build log and the runs: only with the truth
        public_scores=frozenset({"submitted"}),
        secret_assets=frozenset({"patch.diff", "poc", CANARY}),
        scoring_version="arvo-fix-2",
        bug=arvo_bug,  # a fix task's id is the ARVO id
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.floors: dict[str, dict[str, dict[str, float]]] = {}
        """Each task's floors, judged once by this green."""

    @staticmethod
    def canonical(ref_id: str) -> str:
        """ARVO ids are decimal numbers (``010055`` -> ``10055``)."""
        return parse_arvo_id(ref_id)

    def prepare(self, ref: str) -> FixPlan:
        s = self.settings
        files = self.fetch(ref, "error.txt", "repo-vul.tar.gz", "patch.diff", "poc")
        corpus_path = self.optional(ref, CORPUS)
        if corpus_path is not None:
            files[CORPUS] = corpus_path
        canary_path = self.optional(ref, CANARY)
        prepared = self.judge.prepare(files["patch.diff"], files["repo-vul.tar.gz"])
        text = files["error.txt"].read_text(errors="replace")
        corpus = read_corpus(corpus_path)
        builds = self.task_builds(ref, files["patch.diff"], prepared)
        source = project_dir(prepared.project)
        return FixPlan(
            arvo_id=ref,
            image=s.image_template.format(id=ref),
            assets=files,
            prepared=prepared,
            builds=builds,
            truth=FixTruth(
                fix_files=[f.path for f in prepared.ground_truth.files],
                fixed_build=builds.fix_image or "patch.diff on the task image",
                corpus=list(corpus),
                fuzz_target=fuzz_target(text),
            ),
            poc=files["poc"].read_bytes(),
            corpus=corpus,
            harness=_harness(text, prepared.project),
            floor_patch=_crash_line_patch(text, prepared, files["repo-vul.tar.gz"])
            if s.fix_floor
            else None,
            floors=self.floors.setdefault(ref, {"empty": dict.fromkeys(METRICS, 0.0)}),
            fix_patch=files["patch.diff"].read_text(errors="replace"),
            canary=canary_path.read_bytes() if canary_path is not None else None,
            strip_git=s.strip_git,
            hide_poc=s.hide_poc,
            mask_arvo_id=s.mask_arvo_id,
            paths=TaskPaths(
                workspace=source, source_dir=source, error_report=f"{WORKSPACE}/error.txt"
            ),
            workdir=source,
            writable=(f"{WORKSPACE}/shared", source, f"/src/{prepared.project}", "/out"),
        )


def _in_project(path: str, project: str | None) -> str | None:
    prefix = f"/src/{project}/" if project else "/src/"
    return path[len(prefix) :] if path.startswith(prefix) else None


def _harness(error_text: str, project: str | None) -> str | None:
    """The project path of the frame that runs LLVMFuzzerTestOneInput (the fuzz harness)."""
    for frame in crash_frames(error_text):
        if frame.function.startswith("LLVMFuzzerTestOneInput"):
            return _in_project(frame.file, project)
    return None


def _crash_line_patch(error_text: str, prepared: PreparedTask, archive: Path) -> str | None:
    """The crash-frame floor: a patch deleting the line of the top in-project frame."""
    for frame in crash_frames(error_text):
        path = _in_project(frame.file, prepared.project)
        if path is None or frame.line is None:
            continue
        source = check_archive(archive, escaping_symlinks="skip", read=[path]).sources.get(path)
        return delete_line_patch(path, source, frame.line) if source else None
    return None
