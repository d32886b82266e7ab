"""The fix judge: the agent's patch applied to the pristine tree and built in a fresh container.

- ``applied``: the patch applies to the vulnerable tree;
- ``builds``: ``arvo compile`` succeeds (else the compiler's errors are in the explanation);
- ``crash_fixed``: the task's PoC runs clean on the patched build (it finishes, exits 0, prints
  no sanitizer report), and the sanitizer is shown, from outside the build, to be as it was:
  the patched fuzz target defines no sanitizer hook and runs no function before or after
  ``main`` that the vulnerable build's does not (:mod:`.binary`, read before anything of the
  build ran), and where the task has a canary (an input that crashes both the vulnerable and the
  fixed build, in another bug) the patched build still reports it;
- ``behaviour_kept``: on every input of the task's behaviour corpus the patched build does what
  the fixed build (the developers' fix) does: the same exit status, report and stdout (where the
  harness describes what the input parsed to: ``ARENA_BEHAVIOUR``), and, where the fuzz target is
  a libFuzzer binary, a bounded fuzzing run of the patched build from the corpus and the PoC
  finds no crash the fixed build does not also have (a standalone driver cannot be fuzzed: the
  verdict says it was judged on its runs only);
- ``resolved``: all four.

A hang (the build, an input) is stopped at its bound and is the patch's failure; the engine
failing raises (infra). Where the harness prints nothing, the corpus comparison is one of
outcomes only: ``docs/datasets.md`` says what that does and does not catch.
"""

from __future__ import annotations

import difflib
import io
import tarfile

from pydantic import BaseModel

from services.green.kinds.arvo.builds.box import FuzzFinding, JudgeBox
from services.green.kinds.arvo.builds.runs import InputRun
from services.green.kinds.arvo.builds.task_builds import TaskBuilds
from services.green.kinds.arvo.fix.binary import (
    MAX_BINARY_BYTES,
    BinaryFacts,
    NotAnElf,
    added_by_patch,
    read_facts,
)
from services.sandbox.base import UnreadableFile

METRICS = ("applied", "builds", "crash_fixed", "behaviour_kept", "resolved")


class FixPatch(BaseModel):
    """A fix submission: the agent's diff against the pristine tree, and the files it changes."""

    patch: str
    files: list[str]


class FixTruth(BaseModel):
    """What a fix is judged against (never shown to the agent): the developers' fix (its
    files), where the fixed build comes from, the corpus the behaviour is compared on."""

    fix_files: list[str]
    fixed_build: str
    """The ``-fix`` image, or ``patch.diff`` applied to the vulnerable image (the fallback)."""
    corpus: list[str]
    fuzz_target: str | None


class FixScore(BaseModel):
    """A fix task's score: five hit/miss metrics and the build and runs behind them."""

    applied: float = 0.0
    builds: float = 0.0
    crash_fixed: float = 0.0
    behaviour_kept: float = 0.0
    resolved: float = 0.0
    submitted: bool = False
    patch_files: list[str] = []
    build_log: str | None = None
    """Why the patch did not apply or build (the tools' and the compiler's words)."""
    runs: list[InputRun] = []
    """The patched build's runs (the PoC, the corpus, the fuzzing run's finding), then the
    fixed build's runs it is compared with."""
    fuzz_runs: int | None = None
    fuzzed: bool | None = None
    """Whether a fuzzing run judged the build (False: the target is not a libFuzzer binary)."""
    sanitizer_checked: list[str] = []
    """What showed the patched build's sanitizer as it was (the binary, the canary)."""
    floors: dict[str, dict[str, float]] | None = None
    """``empty`` and ``crash_frame`` (the top in-project frame's line deleted), for reports."""
    explanation: list[str] = []

    def metrics(self) -> dict[str, float]:
        return {m: float(getattr(self, m)) for m in METRICS}


def agrees(patched: InputRun, fixed: InputRun) -> bool:
    """The patched build did on an input what the fixed build did."""
    return (
        patched.clean == fixed.clean
        and patched.exit_code == fixed.exit_code
        and patched.timed_out == fixed.timed_out
        and patched.stdout_sha256 == fixed.stdout_sha256
        and (patched.sanitizer, patched.frame) == (fixed.sanitizer, fixed.frame)
    )


async def judge_patch(
    patch: str,
    builds: TaskBuilds,
    *,
    poc: bytes,
    corpus: dict[str, bytes],
    fuzz_target: str | None,
    task_id: str,
    canary: bytes | None = None,
) -> FixScore:
    """Apply, build, check the binary, run the PoC, the canary and the corpus, compare, fuzz:
    the verdict on one patch. ``canary``: an input both the vulnerable and the fixed build
    crash on (None: the task has none)."""
    score = FixScore(submitted=True)
    why = score.explanation
    async with builds.vulnerable(task_id, build="patched") as box:
        before = await _binaries(box, fuzz_target)
        step = await box.build(patch)
        score.applied = float(step.applied)
        if not step.built:
            score.build_log = step.detail
            what = "does not apply" if not step.applied else "does not build"
            why.append(f"the patch {what}: {_first_lines(step.detail)}")
            return _verdict(score)
        score.builds = 1.0
        after = await _binaries(box, fuzz_target)
        changed = _sanitizer_changed(score, before, after)
        if changed:
            why += changed
            return _verdict(score)
        inputs = {"poc": poc, **corpus}
        name = "canary" if "canary" not in corpus else "arena-canary"
        if canary is not None:  # among the others: its place tells the code nothing
            inputs[name] = canary
        runs = await box.run_all(inputs)  # in a random order
        score.runs = list(runs)
        runs, canary_run = runs[: 1 + len(corpus)], runs[1 + len(corpus) :]
        why.append(f"the PoC on the patched build: {runs[0].verdict()}")
        canary_seen = _canary(score, canary_run[0]) if runs[0].clean and canary_run else True
        score.crash_fixed = float(runs[0].clean and canary_seen)
        kept = await _same_on_the_corpus(score, builds, corpus, runs[1:], task_id)
        fuzz = None
        fuzzable = _fuzzable(score, after, fuzz_target)
        if kept and fuzzable and fuzz_target and builds.bounds.fuzz_runs:
            fuzz = await box.fuzz(
                fuzz_target, {**corpus, "poc": poc}
            )  # else nothing it finds matters
    if fuzz is not None:
        score.fuzzed = True
        kept = await _no_new_crash(score, builds, fuzz, task_id)
    score.behaviour_kept = float(kept)
    return _verdict(score)


def _verdict(score: FixScore) -> FixScore:
    score.resolved = float(
        bool(score.applied and score.builds and score.crash_fixed and score.behaviour_kept)
    )
    score.explanation.insert(0, "resolved" if score.resolved else "not resolved")
    return score


async def _binaries(box: JudgeBox, fuzz_target: str | None) -> dict[str, BinaryFacts] | str:
    """The ELF files the build's ``/out`` holds (the fuzz target, or every executable when the
    report names none), parsed by green; a sentence when they cannot be read."""
    if fuzz_target:
        try:
            data = await box.sandbox.read_file(f"/out/{fuzz_target}", MAX_BINARY_BYTES)
            return {fuzz_target: read_facts(data)}
        except (FileNotFoundError, UnreadableFile, NotAnElf) as exc:
            return f"/out/{fuzz_target} cannot be read as a binary: {exc}"
    buf = io.BytesIO()
    try:
        await box.sandbox.read_tree("/out", buf, MAX_BINARY_BYTES)
    except (FileNotFoundError, UnreadableFile) as exc:
        return f"/out cannot be read: {exc}"
    found: dict[str, BinaryFacts] = {}
    buf.seek(0)
    with tarfile.open(fileobj=buf, mode="r|") as tar:
        for m in tar:
            f = tar.extractfile(m) if m.isreg() else None
            data = f.read() if f else b""
            if data.startswith(b"\x7fELF"):
                try:
                    found[m.name.removeprefix("out/")] = read_facts(data)
                except NotAnElf:
                    continue
    return found or "/out holds no ELF binary"


def _sanitizer_changed(
    score: FixScore,
    before: dict[str, BinaryFacts] | str,
    after: dict[str, BinaryFacts] | str,
) -> list[str]:
    """Why the patched build's sanitizer is not the vulnerable build's (empty: it is)."""
    if isinstance(after, str):
        return [f"the patched build's fuzz target cannot be checked: {after}"]
    if isinstance(before, str):  # the task image's own binary: the task's, never the agent's
        score.sanitizer_checked.append(f"not the binary: the vulnerable build's {before}")
        return []
    found = []
    for name, facts in sorted(after.items()):
        old = before.get(name)
        if old is None:
            continue
        found += [f"{name}: {line}" for line in added_by_patch(old, facts)]
        score.sanitizer_checked.append(f"the binary {name}")
    if found:
        found.append(
            "a fix changes what the code does, never how the sanitizer or the process runs: "
            "the PoC's run could not show the crash is fixed"
        )
    return found


def _canary(score: FixScore, run: InputRun) -> bool:
    """The task's canary still made the patched build report (it crashes the developers' fixed
    build too): its sanitizer sees memory errors."""
    if run.crashed:
        score.sanitizer_checked.append("the canary")
        return True
    score.explanation.append(
        f"the canary (an input that crashes the vulnerable and the fixed build, in another bug) "
        f"{run.verdict()} on the patched build: its sanitizer does not report what it should"
    )
    return False


def _fuzzable(
    score: FixScore, after: dict[str, BinaryFacts] | str, fuzz_target: str | None
) -> bool:
    """Whether the fuzz target is a libFuzzer binary; explains when it is not."""
    facts = after.get(fuzz_target) if isinstance(after, dict) and fuzz_target else None
    if facts is not None and facts.libfuzzer:
        return True
    score.fuzzed = False
    what = (
        f"/out/{fuzz_target} is not a libFuzzer binary (a standalone driver)"
        if facts is not None
        else "the crash report names no libFuzzer fuzz target (a standalone driver)"
    )
    score.explanation.append(
        f"{what}: no fuzzing run; its behaviour is judged on the PoC and the corpus only"
    )
    return False


async def _same_on_the_corpus(
    score: FixScore,
    builds: TaskBuilds,
    corpus: dict[str, bytes],
    patched: list[InputRun],
    task_id: str,
) -> bool:
    """Compare the patched build's corpus runs with the fixed build's; explain."""
    why = score.explanation
    if not corpus:
        why.append("the task has no behaviour corpus: only the fuzzing run compares behaviour")
        return True
    reference, _ = await builds.reference(task_id, corpus)
    score.runs += reference
    kept = len(patched) == len(corpus)
    if not kept:
        why.append(f"the corpus was not run to its end: {patched[-1].input} did not finish")
    for p, f in zip(patched, reference, strict=False):
        if not agrees(p, f):
            kept = False
            why.append(
                f"corpus input {p.input}: the patched build {p.verdict()}"
                + (f", printing {p.stdout.strip()[:200]!r}" if p.stdout.strip() else "")
                + f"; the fixed build {f.verdict()}"
                + (f", printing {f.stdout.strip()[:200]!r}" if f.stdout.strip() else "")
            )
    if kept:
        why.append(f"the {len(corpus)} corpus inputs behave as on the fixed build")
    return kept


async def _no_new_crash(
    score: FixScore, builds: TaskBuilds, fuzz: FuzzFinding, task_id: str
) -> bool:
    """Whether the fuzzing run found nothing the fixed build does not fail on too; explain."""
    why = score.explanation
    score.fuzz_runs = fuzz.runs
    if fuzz.stopped:
        why.append(f"the fuzzing run did not finish within {builds.bounds.fuzz_s:g} s")
        return False
    if fuzz.run is None:
        why.append(f"a fuzzing run of {fuzz.runs} inputs found no crash")
        return True
    if fuzz.artifact is None:
        score.runs.append(fuzz.run)
        why.append(f"the fuzzing run of the patched build failed: {fuzz.run.verdict()}")
        return False
    async with builds.fixed(task_id) as (box, _which):
        fixed = await box.run(fuzz.data, fuzz.run.input)
    score.runs += [fuzz.run, fixed]
    if fixed.clean:
        why.append(
            f"the fuzzing run found an input the patched build fails on ({fuzz.run.verdict()}) "
            "and the fixed build runs clean: a new crash"
        )
        return False
    why.append(
        f"the fuzzing run's finding ({fuzz.run.verdict()}) fails the fixed build too "
        f"({fixed.verdict()}): not new"
    )
    return True


def _first_lines(text: str, n: int = 3) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[:n])[:600]


def delete_line_patch(path: str, source: bytes, line: int) -> str | None:
    """A git-style diff that deletes line ``line`` (1-based) of ``path`` (the crash-frame
    floor); None when the file has no such line."""
    text = source.decode("utf-8", "replace").splitlines(keepends=True)
    if not 1 <= line <= len(text):
        return None
    after = text[: line - 1] + text[line:]
    body = "".join(difflib.unified_diff(text, after, f"a/{path}", f"b/{path}", n=3))
    return f"diff --git a/{path} b/{path}\n{body}"
