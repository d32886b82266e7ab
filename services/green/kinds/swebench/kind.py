"""SWE-bench tasks (``swebench:<instance id>``): fix an issue; judged by the instance's tests.

The agent works in the instance's image (the repository at ``/testbed``), with no network, as
in an ARVO task. At ``submit`` green takes the patch out of the container (``git diff`` against
the base commit), keeping only its changes to code (the tests, their configuration and Python's
start-up hooks are the task's: :mod:`services.swebench.patch_filter`); the judge applies that to
the task's pristine tree in a FRESH container, applies the hidden ``test_patch`` and runs
FAIL_TO_PASS and PASS_TO_PASS with its own pytest launcher: resolved or not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from services.green.config import GreenSettings
from services.green.kinds.datasets import DatasetContext
from services.green.kinds.errors import UnknownTask
from services.green.kinds.swebench.datasets import SweDatasets
from services.green.kinds.traits import KindTraits
from services.sandbox.base import Sandbox, SandboxError, SandboxProvider, UnreadableFile
from services.shared.logging import get_logger
from services.shared.outcome import TaskOutcome
from services.shared.protocol import SweTask, TaskAssignment, TaskPaths
from services.shared.scores import aggregate
from services.swebench.activation import resolve_activate, with_activate
from services.swebench.instances import (
    WORKDIR,
    SweInstance,
    image_name,
    load_instances,
)
from services.swebench.judge import PatchUnavailable, evaluate, extract_patch, patch_files

log = get_logger("services.green.kinds.swebench")
_ID_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,200}$")
LOG_KEEP = 4000
"""Characters of the judge's test log stored with the scores."""


class SwePatch(BaseModel):
    """A SWE-bench submission: the agent's ``git diff``, restricted to what the judge applies."""

    model_patch: str
    files: list[str]
    ignored: dict[str, str] = Field(default_factory=dict, exclude_if=lambda v: not v)
    """The files it also changed that the judge takes from the task, and why."""


def _absent(value: Any) -> bool:
    return value is None


class SweScore(BaseModel):
    """A SWE-bench task's score: resolved or not, and the test report behind it (absent when
    nothing was submitted)."""

    resolved: float
    submitted: bool
    patch_applied: bool
    fail_to_pass: dict[str, str] | None = Field(None, exclude_if=_absent)
    pass_to_pass: dict[str, str] | None = Field(None, exclude_if=_absent)
    error: str | None = None
    duration_s: float | None = Field(None, exclude_if=_absent)
    log_tail: str | None = Field(None, exclude_if=_absent)
    explanation: list[str]


class SweTruth(BaseModel):
    """What a SWE-bench answer is judged against (the tests, and which files the fix touched)."""

    model_config = ConfigDict(populate_by_name=True)

    fail_to_pass: list[str] = Field(alias="FAIL_TO_PASS")
    pass_to_pass: list[str] = Field(alias="PASS_TO_PASS")
    gold_patch_files: list[str]
    test_patch_files: list[str]


@dataclass
class SwePlan:
    """A SWE-bench task's plan: a :class:`~services.green.kinds.base.TaskPlan` of a
    :class:`SwePatch`, a :class:`SweScore` and a :class:`SweTruth`."""

    instance: SweInstance
    image: str
    provider: SandboxProvider
    activate_setting: str
    eval_timeout_s: float
    paths: TaskPaths = field(
        default_factory=lambda: TaskPaths(workspace=WORKDIR, source_dir=WORKDIR)
    )
    workdir: str = WORKDIR
    writable: tuple[str, ...] = (WORKDIR,)
    activate: str = ""

    @property
    def log_key(self) -> str:
        return f"swebench_{self.instance.instance_id}"

    async def populate(self, sandbox: Sandbox) -> None:
        """The image holds the repository; only find out how its Python is activated."""
        self.activate = await resolve_activate(sandbox, self.activate_setting)

    def wrap(self, command: str) -> str:
        return with_activate(command, self.activate)

    def describe(self, task: TaskAssignment) -> str:
        i, lim = self.instance, task.limits
        return f"""# Issue-fixing task {task.task_id} (SWE-bench)

<issue>
{i.problem_statement.strip()}
</issue>

The repository {i.repo} is checked out at {WORKDIR} (commit {i.base_commit[:12] or "unknown"}),
inside a sandbox container without network. Change the code so that the issue is fixed; do not
edit the tests (hidden tests will judge your change): the judge ignores your changes to test
files (`test_*.py`, `*_test.py`, `tests/`), to pytest's configuration (`conftest.py`,
`pytest.ini`, `tox.ini`, `setup.cfg`, `pyproject.toml`), to Python's start-up files and to
links.

## How to act
Send messages in this conversation (A2A context `{task.task_id}`):
- `execute: <shell command>` runs the command in the container (bash, cwd `{WORKDIR}`) and
  answers `<returncode>N</returncode><output>...</output>`; timeout {lim.command_timeout_s:g} s.
- `submit` when you are done: green takes `git diff` of {WORKDIR} as your patch.
Every request must carry the task token: the `token` field of a data part, or a last line
`token: {task.token}` in a text message.

## Limits
At most {lim.max_steps} commands; the task ends at {lim.deadline.isoformat()} (UTC).
"""

    async def read_submission(self, sandbox: Sandbox) -> tuple[SwePatch | None, list[str]]:
        """The agent's patch; a repository that gives none (``.git`` removed or broken, a patch
        too large) is the agent's doing: a refusal that says why, never an infrastructure
        failure (which only the engine's own errors are)."""
        try:
            patch = await extract_patch(sandbox, self.instance, workdir=self.workdir)
        except (PatchUnavailable, UnreadableFile) as exc:  # what the agent left
            return None, [f"could not take the patch out of {self.workdir}: {exc}"]
        except SandboxError:  # the engine or the container failed: infra
            raise
        except Exception:  # whatever it says may name green's internals: the log only
            log.exception("swebench.patch_unreadable")
            return None, [f"could not take the patch out of {self.workdir}"]
        if not patch.patch.strip():
            ignored = "; ".join(f"{p} ({why})" for p, why in patch.ignored.items())
            return None, [
                f"{self.workdir} has no changes to code: edit the code, then submit"
                + (
                    f" (changes the judge takes from the task instead: {ignored})"
                    if ignored
                    else ""
                )
            ]
        return SwePatch(model_patch=patch.patch, files=patch.files, ignored=patch.ignored), []

    async def score(self, submission: SwePatch | None) -> SweScore:
        if submission is None:
            return SweScore(
                resolved=0.0,
                submitted=False,
                patch_applied=False,
                explanation=["no patch was submitted: not resolved"],
            )
        report = await evaluate(
            self.provider,
            self.instance,
            self.image,
            submission.model_patch,
            activate=self.activate_setting,
            timeout=self.eval_timeout_s,
        )
        failing = [
            t for t, s in {**report.fail_to_pass, **report.pass_to_pass}.items() if s != "PASSED"
        ]
        why = (
            "resolved: every FAIL_TO_PASS and PASS_TO_PASS test passes"
            if report.resolved
            else "the patch does not apply"
            if not report.patch_applied
            else f"not resolved: the test run was tampered with: {len(report.tampered)} "
            f"test(s) raised but were reported passed: {', '.join(report.tampered[:5])}"
            if report.tampered
            else f"not resolved: {len(failing)} test(s) do not pass: {', '.join(failing[:5])}"
        )
        explanation = [why]
        dropped = {**submission.ignored, **report.ignored}  # at submission, and by the judge
        if dropped:
            ignored = "; ".join(f"{p} ({reason})" for p, reason in dropped.items())
            explanation.append(f"changes the judge took from the task instead: {ignored}")
        if report.error:
            explanation.append(report.error)
        return SweScore(
            resolved=1.0 if report.resolved else 0.0,
            submitted=True,
            patch_applied=report.patch_applied,
            fail_to_pass=report.fail_to_pass,
            pass_to_pass=report.pass_to_pass,
            error=report.error,
            duration_s=report.duration_s,
            log_tail=report.log[-LOG_KEEP:],
            explanation=explanation,
        )

    def ground_truth(self) -> SweTruth:
        return SweTruth(
            fail_to_pass=self.instance.FAIL_TO_PASS,
            pass_to_pass=self.instance.PASS_TO_PASS,
            gold_patch_files=patch_files(self.instance.patch),
            test_patch_files=patch_files(self.instance.test_patch),
        )


class SweBenchKind:
    name = "swebench"
    traits = KindTraits(
        metrics=("resolved",),
        continuous=frozenset(),
        # shown besides ``resolved`` (the test report names the tests: not shown)
        public_scores=frozenset({"submitted"}),
        scoring_version="swebench-resolved-2",
    )
    """What it declares of itself (:class:`~services.green.kinds.traits.KindTraits`)."""
    assignment = SweTask

    def __init__(
        self,
        instances: str | Path,
        provider: SandboxProvider,
        *,
        image_template: str | None = None,
        activate: str = "auto",
        eval_timeout_s: float = 1800.0,
    ) -> None:
        self.source = instances
        self.provider = provider
        self.image_template = image_template
        self.activate = activate
        self.eval_timeout_s = eval_timeout_s

    @cached_property
    def instances(self) -> dict[str, SweInstance]:
        """Loaded on first use (a dataset from the hub may take a while)."""
        return {i.instance_id: i for i in load_instances(self.source)}

    @staticmethod
    def canonical(ref_id: str) -> str:
        if not _ID_RE.match(ref_id):
            raise ValueError(f"not a SWE-bench instance id: {ref_id!r}")
        return ref_id

    @classmethod
    def from_settings(
        cls, settings: GreenSettings, sandboxes: SandboxProvider
    ) -> SweBenchKind | None:
        """Served when GREEN_SWEBENCH_INSTANCES names the instances."""
        if not settings.swebench_instances:
            return None
        return cls(
            settings.swebench_instances,
            sandboxes,
            image_template=settings.swebench_image_template,
            activate=settings.swebench_activate,
            eval_timeout_s=settings.swebench_eval_timeout_s,
        )

    def check(self, ref: str) -> None:
        if ref not in self.instances:
            raise UnknownTask(f"no instance {ref} in {self.source}")

    def prepare(self, ref: str) -> SwePlan:
        self.check(ref)
        instance = self.instances[ref]
        return SwePlan(
            instance=instance,
            image=image_name(instance, self.image_template),
            provider=self.provider,
            activate_setting=self.activate,
            eval_timeout_s=self.eval_timeout_s,
        )

    def datasets(self, context: DatasetContext) -> SweDatasets:
        """List the instances, prefetch an image, verify an instance by its gold patch."""
        return SweDatasets(self)

    def aggregate(self, outcomes: Iterable[TaskOutcome]) -> dict[str, Any]:
        """The resolved rate as every kind's means are made (:func:`services.shared.scores.aggregate`:
        over tasks, a task's trials averaged first, failures 0, each mean with its 95% interval),
        and ``resolved``: how many attempts resolved their instance."""
        rows = list(outcomes)
        agg = aggregate(rows, self.traits.metrics).to_dict()
        agg["resolved"] = sum(
            o.status == "completed" and (o.scores or {}).get("resolved") == 1.0 for o in rows
        )
        return agg
