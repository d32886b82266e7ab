"""Certify a task before it is scored against: the image reproduces error.txt's crash, the fix
stops it, and the ground truth is usable.

Each check that needs the image runs in its own fresh container from green's sandbox provider,
with the sandbox rules of a task container (no network, no privileges, limits). These
containers are green's own and are never handed to an agent, so the crashing input
(``/tmp/poc`` in an ARVO image) stays in them; patch.diff is copied in through the Docker API.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from services.green.kinds.arvo.assets import AssetError, AssetSource
from services.green.kinds.arvo.crash import has_report, mismatch, parse_signature
from services.green.kinds.arvo.judge import Judge, PreparedTask
from services.green.kinds.arvo.scoring.groundtruth import is_code_file
from services.sandbox.base import SandboxError, SandboxProvider, SandboxSpec
from services.shared.commands import CommandResult

FIX_SCRIPT = """\
cd /src/{project} || exit 92
if git rev-parse --git-dir >/dev/null 2>&1; then git apply /tmp/patch.diff; \
else patch -p1 --forward --batch < /tmp/patch.diff; fi >/tmp/apply.log 2>&1 \
  || {{ cat /tmp/apply.log; exit 90; }}
arvo compile >/tmp/compile.log 2>&1 || {{ tail -40 /tmp/compile.log; exit 91; }}
arvo
"""
OUTPUT_LIMIT = 1 << 20
"""Bytes of output kept from a step (a sanitizer report is a few KB: it must never be cut)."""


@dataclass
class Step:
    name: str
    ok: bool
    seconds: float
    detail: str = ""


@dataclass
class Verification:
    """The outcome for one task: verified, or the reasons it is not."""

    ref: str
    image: str
    image_digest: str = "unknown"
    steps: list[Step] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def verified(self) -> bool:
        return bool(self.steps) and all(s.ok for s in self.steps)

    @property
    def reason(self) -> str | None:
        bad = [f"{s.name}: {s.detail}" for s in self.steps if not s.ok]
        return "; ".join(bad) or None

    def steps_dicts(self) -> list[dict[str, Any]]:
        return [asdict(s) for s in self.steps]


def ground_truth_problem(prepared: PreparedTask) -> str | None:
    """Why the ground truth cannot be judged against (None: it can)."""
    gt = prepared.ground_truth
    if "parse-error" in gt.flags:
        return "patch.diff cannot be parsed: " + "; ".join(gt.warnings)
    if gt.empty:
        ignored = ", ".join(i.path for i in gt.ignored) or "nothing"
        return f"the fix changes no code lines (it changes {ignored})"
    not_code = [f.path for f in gt.files if not is_code_file(f.path)]
    if not_code:
        return "the ground truth lies in files that are not code: " + ", ".join(not_code)
    return None


class TaskVerifier:
    """Runs the three checks of one ARVO task (blocking; call it in a thread)."""

    def __init__(
        self,
        assets: AssetSource,
        sandboxes: SandboxProvider,
        image_template: str,
        image_digest: Callable[[str], str],
        *,
        memory: str = "4g",
        cpus: float = 1.0,
        pids_limit: int = 512,
        step_timeout_s: float = 600.0,
        judge: Judge | None = None,
    ) -> None:
        self.assets = assets
        self.sandboxes = sandboxes
        self.image_template = image_template
        self.image_digest = image_digest
        self.limits = {"memory": memory, "cpus": cpus, "pids_limit": pids_limit}
        self.step_timeout_s = step_timeout_s
        self.judge = judge or Judge()

    def verify(self, ref: str) -> Verification:
        started = time.monotonic()
        result = Verification(ref=ref, image=self.image_template.format(id=ref))
        try:
            self._run(result)
        finally:
            result.seconds = round(time.monotonic() - started, 2)
        return result

    def _run(self, result: Verification) -> None:
        t0 = time.monotonic()
        try:
            files = {n: self.assets.fetch(result.ref, n) for n in ("error.txt", "patch.diff")}
            files["repo-vul.tar.gz"] = self.assets.fetch(result.ref, "repo-vul.tar.gz")
            prepared = self.judge.prepare(files["patch.diff"], files["repo-vul.tar.gz"])
        except (AssetError, ValueError, OSError) as exc:
            result.steps.append(Step("assets", False, _since(t0), str(exc)))
            return
        problem = ground_truth_problem(prepared)
        result.steps.append(Step("ground_truth", problem is None, _since(t0), problem or ""))
        try:
            result.image_digest = self.image_digest(result.image)
        except SandboxError as exc:
            result.steps.append(Step("image", False, 0.0, str(exc)))
            return
        error_text = files["error.txt"].read_text(errors="replace")
        crashed = self._reproduce(result, prepared.project, error_text)
        if crashed:
            self._fix(result, prepared.project, files["patch.diff"].read_bytes())

    def _reproduce(self, result: Verification, project: str | None, error_text: str) -> bool:
        """Step 1; returns whether the image crashed at all (else step 2 means nothing)."""
        t0 = time.monotonic()
        expected = parse_signature(error_text, project)
        if expected is not None and expected.frame is None:  # say where error.txt does crash
            expected = parse_signature(error_text, None)
        ran = self._in_container(result, project, "arvo")
        seconds = _since(t0)
        if isinstance(ran, str):
            result.steps.append(Step("reproduce", False, seconds, ran))
            return False
        actual = parse_signature(ran.output, project)
        if ran.timed_out or actual is None:
            why = "timed out" if ran.timed_out else f"exited {ran.exit_code} without a report"
            result.steps.append(Step("reproduce", False, seconds, f"the PoC does not crash: {why}"))
            return False
        if expected is None:
            detail = "error.txt holds no sanitizer report"
        else:
            detail = mismatch(expected, actual) or f"reproduced {actual.describe()}"
        ok = expected is not None and detail.startswith("reproduced")
        result.steps.append(Step("reproduce", ok, seconds, detail))
        return True

    def _fix(self, result: Verification, project: str | None, patch: bytes) -> None:
        t0 = time.monotonic()
        files = {"/tmp/patch.diff": patch}
        ran = self._in_container(result, project, FIX_SCRIPT.format(project=project), files)
        seconds = _since(t0)
        if isinstance(ran, str):
            result.steps.append(Step("fix", False, seconds, ran))
            return
        detail = _fix_verdict(ran, project)
        result.steps.append(Step("fix", detail is None, seconds, detail or "the crash is gone"))

    def _in_container(
        self,
        result: Verification,
        project: str | None,
        script: str,
        files: dict[str, bytes] | None = None,
    ) -> CommandResult | str:
        """Run ``script`` in a fresh network-less container of the task image; a str is an
        infrastructure error. Blocking: runs the async sandbox on an event loop of its own."""
        return asyncio.run(self._in_container_async(result, project, script, files))

    async def _in_container_async(
        self,
        result: Verification,
        project: str | None,
        script: str,
        files: dict[str, bytes] | None = None,
    ) -> CommandResult | str:
        spec = SandboxSpec(
            image=result.image,
            task_id=f"verify-{result.ref}-{secrets.token_hex(3)}",
            ref_id=result.ref,
            network=False,
            output_limit=OUTPUT_LIMIT,
            workdir=f"/src/{project}" if project else "/src",
            labels={"arena.purpose": "verify"},
            **self.limits,
            agent_uid=None,  # green's own container: its commands are green's
        )
        try:
            sandbox = await self.sandboxes.create(spec)
        except SandboxError as exc:
            return f"cannot start a container of {result.image}: {exc}"
        try:
            for path, data in (files or {}).items():
                folder, name = path.rsplit("/", 1)
                await sandbox.put_files(folder or "/", {name: data})
            return await sandbox.exec(script, self.step_timeout_s)
        except SandboxError as exc:
            return f"the container failed: {exc}"
        finally:
            await sandbox.remove()


def _fix_verdict(ran: CommandResult, project: str | None) -> str | None:
    """Why the patched, rebuilt image does not prove the fix (None: the crash is gone)."""
    tail = ran.output[-600:].strip()
    if ran.exit_code == 90:
        return f"patch.diff does not apply: {tail}"
    if ran.exit_code == 91:
        return f"arvo compile fails with patch.diff applied: {tail}"
    if ran.exit_code == 92:
        return f"no /src/{project} in the image"
    if ran.timed_out:
        return "timed out (compile and rerun)"
    if has_report(ran.output) or ran.exit_code != 0:
        sig = parse_signature(ran.output, project)
        still = sig.describe() if sig else f"exit {ran.exit_code}"
        return f"the PoC still crashes after patch.diff and arvo compile: {still}"
    return None


def _since(t0: float) -> float:
    return round(time.monotonic() - t0, 2)
