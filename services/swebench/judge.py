"""Judge a SWE-bench prediction: pure functions over a :class:`Sandbox`.

The steps of the official harness, for instances whose tests run with pytest:

1. :func:`apply_patch` the model's patch to the repository (``git apply``, then ``patch``);
2. :func:`run_tests`: put the instance's test files back to the base commit, apply its
   ``test_patch`` (the hidden tests), run the given test ids as an unprivileged uid and read each
   one's status from the reports pytest made, as the launcher's root half received them
   (:mod:`.pytest_judge`: the tests cannot write that report, and one changed after the fact
   is caught);
3. :func:`evaluate` does both in a fresh container (never the agent's), with only the part of
   the patch that changes code (:mod:`.patch_filter`: the tests, their configuration and
   Python's start-up hooks are the task's), and decides: resolved = that patch applies, every
   FAIL_TO_PASS test passes, every PASS_TO_PASS test still passes, and no report was faked.

Real SWE-bench repositories need per-repository test commands (django's runtests.py, sympy's
bin/test...): for those, use the official harness (``python -m swebench.harness.run_evaluation``).
"""

from __future__ import annotations

import json
import posixpath
import re
import secrets
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from services.sandbox.base import AGENT_UID, Sandbox, SandboxError, SandboxProvider, SandboxSpec
from services.shared.text import clip_middle
from services.swebench.activation import resolve_activate, with_activate
from services.swebench.instances import WORKDIR, SweInstance, image_name
from services.swebench.patch_filter import Restricted, patch_files, restrict

TestStatus = Literal["PASSED", "FAILED", "ERROR"]

PYTEST_ARGS = "-rA -p no:cacheprovider"
"""pytest's arguments before the test ids (``-rA``: the summary a reader of the log wants)."""
SCRATCH = "/tmp/swebench"
"""Where patches and test output go inside the container (outside the repository)."""
JUDGE_SCRIPT = Path(__file__).with_name("pytest_judge.py")
"""The judge's test launcher and pytest plugin, copied into the container (:mod:`.pytest_judge`)."""
TESTS_UID = AGENT_UID
"""The uid the tests run as in the judge's container (the repository made theirs): never root,
which alone writes the report (:mod:`.pytest_judge`)."""
VERDICT = "ARENA-VERDICT "
"""How the launcher's last line starts (:data:`.pytest_judge.VERDICT`)."""
_FOLDER = re.compile(r"^/[A-Za-z0-9_./-]+/arena-verdict-[A-Za-z0-9_]+$")
LOG_LIMIT = 20_000
"""Characters of test output kept in an :class:`EvalReport` (head and tail)."""
GIT = "GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null git -c core.fileMode=false"
"""git as the judge runs it on the agent's repository: no system or global configuration (and,
in :func:`extract_patch`, a git directory of its own: none of the repository's)."""
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


class PatchUnavailable(Exception):
    """The agent's repository gives no patch (its ``.git`` removed or broken, the diff too
    slow): what the agent left, never an infrastructure failure."""


class EvalReport(BaseModel):
    instance_id: str
    resolved: bool
    patch_applied: bool
    fail_to_pass: dict[str, TestStatus] = {}
    pass_to_pass: dict[str, TestStatus] = {}
    ignored: dict[str, str] = {}
    """Files the patch changed that the judge takes from the task instead, and why
    (:func:`~.patch_filter.restrict`)."""
    tampered: list[str] = []
    """Tests whose report says passed although they raised: the run was tampered with."""
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
    tampered: list[str] = field(default_factory=list)
    """Tests reported passed although they raised (:mod:`.pytest_judge`)."""

    def status_of(self, test_id: str) -> TestStatus:
        """A test that was asked for but never reported (not collected) is an ERROR."""
        return self.statuses.get(test_id, "ERROR")


# ---- patches ----------------------------------------------------------------------------------


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
) -> Restricted:
    """The changes made in ``workdir`` since the base commit, as a binary-safe ``git diff``
    (new files included) restricted to what the judge applies (:func:`~.patch_filter.restrict`:
    the rest is listed as ignored). A repository that gives no diff (``.git`` removed or broken)
    raises :class:`PatchUnavailable`: the agent's doing.

    git runs with a git directory of the judge's own, in a folder made for it: the repository's
    objects are only read (as alternates), its configuration, hooks, index and
    ``info/attributes`` never, so no filter, hook or monitor the agent configured runs (its
    code, outside its commands, rewriting what is taken), and its index is left as it was. The diff goes through a file in that folder, so it is never cut
    and no link the agent left decides where it goes."""
    folder = f"/tmp/arena-patch-{secrets.token_hex(8)}"
    repo = shlex.quote(workdir)
    base = (
        shlex.quote(f"{instance.base_commit}^{{commit}}")
        if instance.base_commit
        else f"$(GIT_DIR={repo}/.git {GIT} rev-parse --verify HEAD^{{commit}})"
    )
    script = f"""set -e
t={folder}
mkdir -m 700 "$t"
mkdir -p "$t/git/objects/info" "$t/git/refs"
echo 'ref: refs/heads/judge' > "$t/git/HEAD"
echo {repo}/.git/objects > "$t/git/objects/info/alternates"
export GIT_DIR="$t/git" GIT_WORK_TREE={repo} GIT_INDEX_FILE="$t/git/index"
cd {repo}
base=$({GIT} rev-parse --verify -q {base})
{GIT} read-tree "$base"
{GIT} add -A
{GIT} diff --cached --binary --no-ext-diff --no-textconv "$base" > "$t/model.patch"
"""
    result = await sandbox.exec(script, timeout)
    if result.exit_code != 0 or result.timed_out:
        why = "timed out" if result.timed_out else f"exit {result.exit_code}"
        raise PatchUnavailable(
            f"git could not diff {workdir} against the task's commit ({why}): "
            f"{clip_middle(result.output.strip(), 500)}"
        )
    data = await sandbox.read_file(f"{folder}/model.patch", max_bytes=max_bytes)
    return restrict(data.decode("utf-8", errors="replace"), instance)


# ---- tests ------------------------------------------------------------------------------------


def parse_pytest_log(text: str) -> dict[str, TestStatus]:
    """Test statuses from the output of an instance's own ``test_cmd`` (pytest's): the ``-rA``
    short summary (``PASSED path::test``, ``FAILED path::test - message``) and verbose lines
    (``path::test PASSED [ 50%]``). XFAIL
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


def read_judge_report(text: str) -> tuple[dict[str, TestStatus], list[str]]:
    """Test statuses from :mod:`.pytest_judge`'s report (one JSON line per test phase), and the
    tests reported passed although a phase raised (tampered with, counted FAILED). As in
    :func:`parse_pytest_log`: an expected failure counts as passed, an unexpected pass and a
    skip as failed, a failed set-up or tear-down is an ERROR, and a test keeps its worst status."""
    out: dict[str, TestStatus] = {}
    tampered: dict[str, None] = {}
    for line in text.splitlines():
        try:
            phase = json.loads(line)
        except ValueError:
            continue
        if not isinstance(phase, dict) or not isinstance(test_id := phase.get("id"), str):
            continue
        when, outcome, xfail = phase.get("when"), phase.get("outcome"), bool(phase.get("xfail"))
        status: TestStatus
        if outcome == "passed" and phase.get("raised"):
            tampered[test_id], status = None, "FAILED"
        elif outcome == "failed":
            status = "FAILED" if when == "call" else "ERROR"
        elif outcome == "skipped":
            status = "PASSED" if xfail else "FAILED"
        elif outcome == "passed" and when == "call":
            status = "FAILED" if xfail else "PASSED"
        else:  # a set-up or tear-down that passed says nothing of the test
            continue
        if test_id not in out or _RANK[status] > _RANK[out[test_id]]:
            out[test_id] = status
    return out, list(tampered)


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
    (all the tests when empty) and read their statuses: from the judge's own pytest run
    (:mod:`.pytest_judge`), or, for an instance with its own ``test_cmd``, from its output.
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
    await sandbox.put_files(SCRATCH, {JUDGE_SCRIPT.name: JUDGE_SCRIPT.read_bytes()})
    ids = " ".join(shlex.quote(t) for t in tests or [])
    run_as = f"{TESTS_UID}:{TESTS_UID}"
    launch = f"python {SCRATCH}/{JUDGE_SCRIPT.name} {TESTS_UID} " + (
        f"--pytest {PYTEST_ARGS} {ids}"
        if instance.test_cmd is None
        else f"--command {shlex.quote(f'{instance.test_cmd} {ids}')}"
    )
    script = with_activate(
        f"cd {shlex.quote(workdir)} && chown -R {run_as} . || exit 97\n{launch}", activate
    )
    result = await sandbox.exec(script, timeout)
    verdict = _verdict_folder(result.output)
    missing = f"no test output (the judge's run ended before it wrote one)\n{result.output}"
    text = await _read_text(sandbox, f"{verdict}/output.txt", missing) if verdict else missing
    if result.timed_out:
        text += f"\n[the tests timed out after {timeout:.0f}s and were killed]"
    run = TestRun(parse_pytest_log(text), notes + text, result.exit_code, result.timed_out)
    if instance.test_cmd is None:  # never the output's word: the tests' code may print it
        report = (
            await _read_text(sandbox, f"{verdict}/report.jsonl", "no report") if verdict else ""
        )
        run.statuses, run.tampered = read_judge_report(report)
    return run


def _verdict_folder(output: str) -> str | None:
    """The folder the launcher's root half wrote the report and the output to, from its own last
    line (the tests' output never reaches this stream: :mod:`.pytest_judge`)."""
    for line in reversed(output.splitlines()):
        if line.startswith(VERDICT):
            folder = line.removeprefix(VERDICT).strip()
            return folder if _FOLDER.match(folder) else None
    return None


async def _read_text(sandbox: Sandbox, path: str, missing: str) -> str:
    try:
        return (await sandbox.read_file(path, max_bytes=16 << 20)).decode("utf-8", "replace")
    except (OSError, SandboxError) as exc:  # missing, unreadable, or the engine failed
        return f"[{missing}: {exc}]"


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
        kept = restrict(model_patch, instance)
        report.ignored = kept.ignored
        sandbox = await provider.create(spec)
        prefix = await resolve_activate(sandbox, activate)
        applied, apply_log = await apply_patch(sandbox, kept.patch, workdir=workdir)
        report.patch_applied = applied
        report.log = f"[model patch]\n{apply_log.strip()}\n"
        if kept.ignored:
            ignored = "".join(f"\n  {p}: {why}" for p, why in kept.ignored.items())
            report.log += f"[changes the judge takes from the task instead]{ignored}\n"
        if applied:
            tests = [*instance.FAIL_TO_PASS, *instance.PASS_TO_PASS]
            run = await run_tests_with_log(
                sandbox, instance, tests, workdir=workdir, activate=prefix, timeout=timeout
            )
            report.fail_to_pass = {t: run.status_of(t) for t in instance.FAIL_TO_PASS}
            report.pass_to_pass = {t: run.status_of(t) for t in instance.PASS_TO_PASS}
            report.log += clip_middle(run.output, LOG_LIMIT)
            report.tampered = run.tampered
            if run.timed_out:
                report.error = f"the tests timed out after {timeout:.0f}s"
            report.resolved = (
                all(
                    s == "PASSED"
                    for s in [*report.fail_to_pass.values(), *report.pass_to_pass.values()]
                )
                and not run.timed_out
                and not run.tampered
            )
    except (SandboxError, OSError) as exc:
        report.error = f"{type(exc).__name__}: {exc}"
        report.resolved = False
    finally:
        if sandbox is not None:
            await sandbox.remove()
        report.duration_s = round(time.monotonic() - start, 3)
    return report
