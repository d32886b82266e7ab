"""ARVO reproduce tasks (``arvo-poc:<id>``, CyberGym's task): write an input that crashes the
vulnerable build, and not the fixed one, on the task's bug.

The agent works in the vulnerable image, as in a locate task, with the source tree, the fuzz
target's name and the help of its level (:mod:`.levels`); it writes ``/workspace/shared/poc``
and submits. The task's own PoC, its hash and the fix never enter its container or its
messages: the judge (:mod:`.judge`) needs neither (it runs the agent's input on the task's
builds, :mod:`services.green.kinds.arvo.builds`, and reads error.txt's crash).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from services.green.kinds.arvo.bugs import arvo_bug
from services.green.kinds.arvo.builds.kind import BuildJudgedKind, build_judged_traits
from services.green.kinds.arvo.builds.task_builds import TaskBuilds
from services.green.kinds.arvo.crash import fuzz_target, parse_signature, where
from services.green.kinds.arvo.judge import PreparedTask
from services.green.kinds.arvo.poc.judge import (
    METRICS,
    PocInput,
    PocScore,
    PocTruth,
    judge_input,
    unsubmitted,
)
from services.green.kinds.arvo.poc.levels import canonical_poc_id, parse_poc_id, withhold_input
from services.green.kinds.arvo.poc.prompt import describe_poc_task
from services.green.kinds.arvo.workspace import (
    SOURCE_DIR,
    WORKSPACE,
    populate_workspace,
    project_dir,
)
from services.sandbox.base import Sandbox, UnreadableFile
from services.shared.protocol import PocTask, TaskAssignment, TaskPaths

POC_PATH = f"{WORKSPACE}/shared/poc"
DESCRIPTION = "description.txt"
WRITABLE = (f"{WORKSPACE}/shared",)
"""What the agent of a reproduce task may write (the sandbox makes the rest read-only to it)."""


@dataclass
class PocPlan:
    """A reproduce task's plan: a :class:`~services.green.kinds.base.TaskPlan` of a
    :class:`PocInput`, a :class:`PocScore` and a :class:`PocTruth`."""

    arvo_id: str
    level: int
    image: str
    assets: dict[str, Path]
    """What decides the score (recorded in the provenance): error.txt, the source, patch.diff."""
    prepared: PreparedTask
    builds: TaskBuilds
    truth: PocTruth
    files: dict[str, bytes]
    """What goes into /workspace besides the source: the level's description and report."""
    max_bytes: int
    strip_git: bool
    hide_poc: bool
    mask_arvo_id: bool
    paths: TaskPaths = field(default_factory=lambda: TaskPaths(workspace=WORKSPACE))
    workdir: str = WORKSPACE
    writable: tuple[str, ...] = WRITABLE
    task_id: str = ""
    """Green's id of the task (known once it is described): its judging containers carry it."""

    @property
    def workspace_bytes(self) -> int:
        return self.prepared.workspace_bytes

    @property
    def log_key(self) -> str:
        return f"arvo-poc_{self.arvo_id}"

    async def populate(self, sandbox: Sandbox) -> None:
        await populate_workspace(
            sandbox,
            self.files,
            self.assets["repo-vul.tar.gz"],
            self.prepared.archive_top,
            strip_git=self.strip_git,
            hide_poc=self.hide_poc,
        )

    def wrap(self, command: str) -> str:
        return command

    def describe(self, task: TaskAssignment) -> str:
        self.task_id = task.task_id
        description = self.files.get(DESCRIPTION)
        return describe_poc_task(
            task,
            source=project_dir(self.prepared.project),
            fuzz_target=self.truth.fuzz_target,
            level=self.level,
            description=description.decode("utf-8", "replace") if description else None,
            max_bytes=self.max_bytes,
            arvo_id=None if self.mask_arvo_id else self.arvo_id,
        )

    async def read_submission(self, sandbox: Sandbox) -> tuple[PocInput | None, list[str]]:
        try:
            data = await sandbox.read_file(POC_PATH, max_bytes=self.max_bytes)
        except FileNotFoundError:
            return None, [f"{POC_PATH} does not exist; write your input there first"]
        except UnreadableFile as exc:  # a directory, larger than the bound, ...
            return None, [f"could not take {POC_PATH}: {exc} (at most {self.max_bytes:,} bytes)"]
        return PocInput.of(data), []

    async def score(self, submission: PocInput | None) -> PocScore:
        if submission is None:
            return unsubmitted(self.level)
        return await judge_input(
            submission.raw(), self.builds, self.truth, self.task_id or "arvo-poc"
        )

    def ground_truth(self) -> PocTruth:
        return self.truth


def level_files(
    level: int, error_text: bytes, description: bytes | None, poc: bytes | None
) -> dict[str, bytes]:
    """What a task of ``level`` puts into /workspace: level 1 a description (the report's
    sanitizer class when the dataset has none), level 2 also the report, input withheld."""
    files: dict[str, bytes] = {}
    if level >= 1:
        if description is None:
            sig = parse_signature(error_text.decode("utf-8", "replace"), None)
            description = f"{sig.sanitizer_class if sig else 'A sanitizer crash'}.\n".encode()
        files[DESCRIPTION] = description
    if level >= 2:
        files["error.txt"] = withhold_input(error_text.decode("utf-8", "replace"), poc).encode()
    return files


def reproduce_bug(ref_id: str) -> str:
    """The bug a reproduce task is about, whatever its help level (``10055-l2`` -> ``arvo:10055``)."""
    return arvo_bug(parse_poc_id(ref_id)[0])


class ArvoPocKind(BuildJudgedKind):
    name = "arvo-poc"
    assignment = PocTask
    traits = build_judged_traits(
        METRICS,
        # the runs name the task's crash: not shown
        public_scores=frozenset({"submitted", "level", "input_bytes"}),
        secret_assets=frozenset({"patch.diff", "poc"}),
        scoring_version="arvo-poc-1",
        bug=reproduce_bug,
    )

    @staticmethod
    def canonical(ref_id: str) -> str:
        """An ARVO id with an optional help level: ``10055``, ``10055-l0``, ``10055-l2``."""
        return canonical_poc_id(ref_id)

    @staticmethod
    def arvo_id(ref_id: str) -> str:
        return parse_poc_id(ref_id)[0]

    def _read(self, arvo_id: str, name: str) -> bytes | None:
        path = self.optional(arvo_id, name)
        return path.read_bytes() if path else None

    def prepare(self, ref: str) -> PocPlan:
        arvo_id, level = parse_poc_id(ref)
        s = self.settings
        files = self.fetch(arvo_id, "error.txt", "repo-vul.tar.gz", "patch.diff")
        prepared = self.judge.prepare(files["patch.diff"], files["repo-vul.tar.gz"])
        error = files["error.txt"].read_bytes()
        text = error.decode("utf-8", "replace")
        sig = parse_signature(text, prepared.project)
        truth = PocTruth(
            sanitizer=sig.sanitizer_class if sig else None,
            frame=where(sig.frame) if sig else None,
            fuzz_target=fuzz_target(text),
            level=level,
        )
        description = self._read(arvo_id, DESCRIPTION) if level >= 1 else None
        poc = self._read(arvo_id, "poc") if level >= 2 else None  # only to withhold it
        return PocPlan(
            arvo_id=arvo_id,
            level=level,
            image=s.image_template.format(id=arvo_id),
            assets=files,
            prepared=prepared,
            builds=self.task_builds(arvo_id, files["patch.diff"], prepared),
            truth=truth,
            files=level_files(level, error, description, poc),
            max_bytes=s.poc_max_bytes,
            strip_git=s.strip_git,
            hide_poc=s.hide_poc,
            mask_arvo_id=s.mask_arvo_id,
            paths=TaskPaths(
                workspace=WORKSPACE,
                source_dir=SOURCE_DIR,
                error_report=f"{WORKSPACE}/error.txt" if level >= 2 else "",
                submission=POC_PATH,
            ),
        )
