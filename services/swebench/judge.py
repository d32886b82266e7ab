"""Judge a SWE-bench prediction: pure functions over a :class:`Sandbox`.

The steps of the official harness, for instances whose tests run with pytest:

1. :func:`apply_patch` the model's patch to the repository (``git apply``, then ``patch``);
2. :func:`run_tests`: put the instance's test files back to the base commit, apply its
   ``test_patch`` (the hidden tests), run the given test ids and read pytest's ``-rA`` summary;
3. :func:`evaluate` does both in a fresh container (never the agent's) and decides:
   resolved = the patch applies, every FAIL_TO_PASS test passes and every PASS_TO_PASS test
   still passes.

Real SWE-bench repositories need per-repository test commands (django's runtests.py, sympy's
bin/test...): for those, use the official harness (``python -m swebench.harness.run_evaluation``).
"""

from __future__ import annotations

import posixpath
import re
import shlex
import time
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from services.sandbox.base import Sandbox, SandboxError, SandboxProvider, SandboxSpec
from services.shared.text import clip_middle
from services.swebench.activation import resolve_activate, with_activate
from services.swebench.instances import WORKDIR, SweInstance, image_name

TestStatus = Literal["PASSED", "FAILED", "ERROR"]

DEFAULT_TEST_CMD = "python -m pytest -rA -p no:cacheprovider"
"""Runs test ids (pytest node ids) and prints the ``-rA`` summary :func:`parse_pytest_log` reads."""
SCRATCH = "/tmp/swebench"
"""Where patches and test output go inside the container (outside the repository)."""
LOG_LIMIT = 20_000
"""Characters of test output kept in an :class:`EvalReport` (head and tail)."""

_DIFF_GIT = re.compile(r"^diff --git a/(.+?) b/(.+)$", re.MULTILINE)
_SUMMARY = re.compile(
    r"^(?P<status>PASSED|FAILED|ERROR|XFAIL|XPASS|SKIPPED)\s+(?P<id>[^\s\[]+(?:\[.*?\])?)"
    r"(?:\s+-\s.*)?\s*$"
)
_VERBOSE = re.compile(
    r"^(?P<id>[^\s\[]+::[^\s\[]+(?:\[.*?\])?)\s+(?P<status>PASSED|FAILED|ERROR|XFAIL|XPASS|SKIPPED)\b"
)
_STATUS: dict[str, TestStatus] = {
    "PASSED": "PASSED",
    "XFAIL": "PASSED",  # as the official grading counts them
    "FAILED": "FAILED",
    "XPASS": "FAILED",
    "SKIPPED": "FAILED",
    "ERROR": "ERROR",
}
_RANK = {"PASSED": 0, "FAILED": 1, "ERROR": 2}


class EvalReport(BaseModel):
    instance_id: str
    resolved: bool
    patch_applied: bool
    fail_to_pass: dict[str, TestStatus] = {}
    pass_to_pass: dict[str, TestStatus] = {}
    log: str = ""
    """How the patch applied, then the test output (cut in the middle when long)."""
    error: str | None = None
    """Set when the evaluation itself failed (image missing, container lost, timeout)."""
    duration_s: float = 0.0


@dataclass
class TestRun:
    __test__ = False  # not a pytest test class

    statuses: dict[str, TestStatus]
    """Every test id pytest reported (not only the requested ones)."""
    output: str
    exit_code: int
    timed_out: bool = False

    def status_of(self, test_id: str) -> TestStatus:
        """A test that was asked for but never reported (not collected) is an ERROR."""
        return self.statuses.get(test_id, "ERROR")


# ---- patches ----------------------------------------------------------------------------------


def patch_files(patch: str) -> list[str]:
    """Repository paths a ``git diff`` touches (both sides of a rename), in order."""
    seen: dict[str, None] = {}
    for a, b in _DIFF_GIT.findall(patch or ""):
        seen.setdefault(a, None)
        seen.setdefault(b, None)
    return list(seen)


async def apply_patch(
    sandbox: Sandbox,
    patch: str,
    *,
    workdir: str = WORKDIR,
    name: str = "model.patch",
    timeout: float = 120.0,
) -> tuple[bool, str]:
    """Apply a patch in ``workdir``: ``git apply``, else ``patch -p1 --forward`` (fuzz 5), else
    ``git apply --3way``. Returns (applied, what the tools said). The patch goes in as a file
    (``put_files``), so any content is safe."""
    if not patch or not patch.strip():
        return False, "empty patch: nothing to apply"
    await sandbox.put_files(
        SCRATCH, {name: patch.encode() if patch.endswith("\n") else (patch + "\n").encode()}
    )
    path = shlex.quote(posixpath.join(SCRATCH, name))
    script = f"""cd {shlex.quote(workdir)} || exit 97
if git apply --verbose --whitespace=nowarn {path} 2>&1; then echo "APPLIED: git apply"; exit 0; fi
if patch --batch --forward --fuzz=5 -p1 --dry-run -i {path} >/dev/null 2>&1 && patch --batch --forward --fuzz=5 -p1 -i {path} 2>&1; then echo "APPLIED: patch -p1"; exit 0; fi
if git apply --verbose --3way {path} 2>&1; then echo "APPLIED: git apply --3way"; exit 0; fi
echo "NOT APPLIED"; exit 1"""
    result = await sandbox.exec(script, timeout)
    return result.exit_code == 0, result.output


async def extract_patch(
    sandbox: Sandbox,
    instance: SweInstance,
    *,
    workdir: str = WORKDIR,
    timeout: float = 120.0,
    max_bytes: int = 32 << 20,
) -> str:
    """The changes made in ``workdir`` since the base commit, as a binary-safe ``git diff``
    (new files included; the test files of the instance's ``test_patch`` excluded, so the
    tests stay untouched). The diff goes through a file, so it is never cut."""
    excludes = " ".join(shlex.quote(f":(exclude){p}") for p in patch_files(instance.test_patch))
    out = posixpath.join(SCRATCH, "model.patch")
    base = shlex.quote(f"{instance.base_commit}^{{commit}}") if instance.base_commit else "HEAD"
    script = (
        f"mkdir -p {SCRATCH} && cd {shlex.quote(workdir)} && "
        f"{{ base=$(git rev-parse --verify -q {base}) || base=$(git rev-parse HEAD); }} && "
        "git -c core.fileMode=false add -A && "
        f'git -c core.fileMode=false diff --cached --binary "$base" -- . {excludes} > {out}'
    )
    result = await sandbox.exec(script, timeout)
    if result.exit_code != 0:
        raise SandboxError(
            f"cannot extract the patch (exit {result.exit_code}): {result.output[-2000:]}"
        )
    data = await sandbox.read_file(out, max_bytes=max_bytes)
    return data.decode("utf-8", errors="replace")


# ---- tests ------------------------------------------------------------------------------------


def parse_pytest_log(text: str) -> dict[str, TestStatus]:
    """Test statuses from pytest output: the ``-rA`` short summary (``PASSED path::test``,
    ``FAILED path::test - message``) and verbose lines (``path::test PASSED [ 50%]``). XFAIL
    counts as passed, XPASS and SKIPPED as failed; a test reported twice keeps its worst
    status (a pass with an error at teardown is an ERROR)."""
    out: dict[str, TestStatus] = {}
    for line in text.splitlines():
        line = line.strip()
        m = _SUMMARY.match(line) or _VERBOSE.match(line)
        if not m:
            continue
        test_id, status = m.group("id"), _STATUS[m.group("status")]
        if "::" not in test_id and status != "ERROR":
            continue  # SKIPPED [1] file:line lines carry no test id
        if test_id not in out or _RANK[status] > _RANK[out[test_id]]:
            out[test_id] = status
    return out


def reset_tests_script(instance: SweInstance, workdir: str = WORKDIR) -> str:
    """Shell that puts the files of ``test_patch`` back as in the base commit (new ones
    removed), so the test patch applies on whatever the model did to them."""
    base = shlex.quote(instance.base_commit or "HEAD")
    lines = [f"cd {shlex.quote(workdir)} || exit 97"]
    for path in patch_files(instance.test_patch):
        p = shlex.quote(path)
        lines.append(
            f"if git cat-file -e {base}:{p} 2>/dev/null; then git checkout -q {base} -- {p}; "
            f"else rm -f -- {p}; fi"
        )
    return "\n".join(lines)


async def run_tests_with_log(
    sandbox: Sandbox,
    instance: SweInstance,
    tests: list[str] | None = None,
    *,
    workdir: str = WORKDIR,
    activate: str = "",
    apply_test_patch: bool = True,
    timeout: float = 1800.0,
) -> TestRun:
    """Reset and apply the instance's ``test_patch`` (unless told not to), run ``tests``
    (all the tests when empty) with the instance's test command, parse the output.
    ``activate``: an activation prefix (see :func:`~.activation.resolve_activate`)."""
    notes = ""
    if apply_test_patch and instance.test_patch.strip():
        reset = await sandbox.exec(reset_tests_script(instance, workdir), 120)
        if reset.exit_code != 0:
            raise SandboxError(f"cannot reset the test files: {reset.output[-2000:]}")
        ok, out = await apply_patch(
            sandbox, instance.test_patch, workdir=workdir, name="test.patch"
        )
        if not ok:
            raise SandboxError(f"the instance's test_patch does not apply:\n{out[-2000:]}")
        notes = f"[test_patch applied]\n{out.strip()}\n"
    cmd = instance.test_cmd or DEFAULT_TEST_CMD
    ids = " ".join(shlex.quote(t) for t in tests or [])
    output = posixpath.join(SCRATCH, "test_output.txt")
    script = with_activate(
        f"mkdir -p {SCRATCH}; cd {shlex.quote(workdir)} || exit 97\n{cmd} {ids} > {output} 2>&1",
        activate,
    )
    result = await sandbox.exec(script, timeout)
    try:
        data = await sandbox.read_file(output, max_bytes=16 << 20)
        text = data.decode("utf-8", errors="replace")
    except (OSError, SandboxError) as exc:  # missing, unreadable, or the engine failed
        text = f"[no test output: {exc}]\n{result.output}"
    if result.timed_out:
        text += f"\n[the tests timed out after {timeout:.0f}s and were killed]"
    return TestRun(parse_pytest_log(text), notes + text, result.exit_code, result.timed_out)


async def run_tests(
    sandbox: Sandbox,
    instance: SweInstance,
    tests: list[str],
    *,
    workdir: str = WORKDIR,
    activate: str = "",
    timeout: float = 1800.0,
) -> dict[str, TestStatus]:
    """Apply the instance's ``test_patch``, run ``tests``; the status of each one (a test
    never reported is an ERROR)."""
    run = await run_tests_with_log(
        sandbox, instance, tests, workdir=workdir, activate=activate, timeout=timeout
    )
    return {t: run.status_of(t) for t in tests}


# ---- the verdict ------------------------------------------------------------------------------


async def evaluate(
    provider: SandboxProvider,
    instance: SweInstance,
    image: str | None = None,
    model_patch: str = "",
    *,
    activate: str | None = "auto",
    workdir: str = WORKDIR,
    timeout: float = 1800.0,
    memory: str = "4g",
    cpus: float = 2.0,
    task_id: str | None = None,
) -> EvalReport:
    """Judge ``model_patch`` for ``instance`` in a fresh container of ``image`` (default:
    :func:`~.instances.image_name`), which is always removed. Never raises for a bad patch or
    failing tests; an infrastructure failure is reported in ``error`` (not resolved)."""
    start = time.monotonic()
    iid = instance.instance_id
    report = EvalReport(instance_id=iid, resolved=False, patch_applied=False)
    spec = SandboxSpec(
        image=image or image_name(instance),
        task_id=task_id or f"swe-eval-{iid}",
        ref_id=iid,
        network=False,
        workdir=workdir,
        memory=memory,
        cpus=cpus,
        labels={"arena.kind": "swebench-eval"},
        agent_uid=None,  # green's own container: its commands are green's
    )
    sandbox: Sandbox | None = None
    try:
        sandbox = await provider.create(spec)
        prefix = await resolve_activate(sandbox, activate)
        applied, apply_log = await apply_patch(sandbox, model_patch, workdir=workdir)
        report.patch_applied = applied
        report.log = f"[model patch]\n{apply_log.strip()}\n"
        if applied:
            tests = [*instance.FAIL_TO_PASS, *instance.PASS_TO_PASS]
            run = await run_tests_with_log(
                sandbox, instance, tests, workdir=workdir, activate=prefix, timeout=timeout
            )
            report.fail_to_pass = {t: run.status_of(t) for t in instance.FAIL_TO_PASS}
            report.pass_to_pass = {t: run.status_of(t) for t in instance.PASS_TO_PASS}
            report.log += clip_middle(run.output, LOG_LIMIT)
            if run.timed_out:
                report.error = f"the tests timed out after {timeout:.0f}s"
            report.resolved = (
                all(
                    s == "PASSED"
                    for s in [*report.fail_to_pass.values(), *report.pass_to_pass.values()]
                )
                and not run.timed_out
            )
    except (SandboxError, OSError) as exc:
        report.error = f"{type(exc).__name__}: {exc}"
        report.resolved = False
    finally:
        if sandbox is not None:
            await sandbox.remove()
        report.duration_s = round(time.monotonic() - start, 3)
    return report
