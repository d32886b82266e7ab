"""The fix judge: the agent's patch applied to the pristine tree and built in a fresh container.

- ``applied``: the patch applies to the vulnerable tree;
- ``builds``: ``arvo compile`` succeeds (else the compiler's errors are in the explanation);
- ``crash_fixed``: the task's PoC runs clean on the patched build (it finishes, exits 0, prints
  no sanitizer report);
- ``behaviour_kept``: on every input of the task's behaviour corpus the patched build does what
  the fixed build (the developers' fix) does: the same outcome and the same stdout (where the
  harness describes what the input parsed to: ``ARENA_BEHAVIOUR``), and a bounded fuzzing run of
  the patched build from the corpus and the PoC finds no crash the fixed build does not also
  have;
- ``resolved``: all four.

A hang (the build, an input) is stopped at its bound and is the patch's failure; the engine
failing raises (infra). Where the harness prints nothing, the corpus comparison is one of
outcomes only: ``docs/datasets.md`` says what that does and does not catch.
"""

from __future__ import annotations

import difflib

from pydantic import BaseModel

from services.green.kinds.arvo.builds.box import FuzzFinding
from services.green.kinds.arvo.builds.runs import InputRun
from services.green.kinds.arvo.builds.task_builds import TaskBuilds

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
    floors: dict[str, dict[str, float]] | None = None
    """``empty`` and ``crash_frame`` (the top in-project frame's line deleted), for reports."""
    explanation: list[str] = []

    def metrics(self) -> dict[str, float]:
        return {m: float(getattr(self, m)) for m in METRICS}


def agrees(patched: InputRun, fixed: InputRun) -> bool:
    """The patched build did on an input what the fixed build did."""
    return (
        patched.clean == fixed.clean
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
) -> FixScore:
    """Apply, build, run the PoC and the corpus, compare, fuzz: the verdict on one patch."""
    score = FixScore(submitted=True)
    why = score.explanation
    async with builds.vulnerable(task_id, build="patched") as box:
        step = await box.build(patch)
        score.applied = float(step.applied)
        if not step.built:
            score.build_log = step.detail
            what = "does not apply" if not step.applied else "does not build"
            why.append(f"the patch {what}: {_first_lines(step.detail)}")
            return score
        score.builds = 1.0
        runs = await box.run_all({"poc": poc, **corpus})  # in a random order
        score.runs = runs
        score.crash_fixed = float(runs[0].clean)
        why.append(f"the PoC on the patched build: {runs[0].verdict()}")
        kept = await _same_on_the_corpus(score, builds, corpus, runs[1:], task_id)
        fuzz = None
        if kept and fuzz_target and builds.bounds.fuzz_runs:  # else nothing it finds matters
            fuzz = await box.fuzz(fuzz_target, {**corpus, "poc": poc})
    if fuzz is not None:
        kept = await _no_new_crash(score, builds, fuzz, task_id)
    score.behaviour_kept = float(kept)
    score.resolved = float(score.applied and score.builds and score.crash_fixed and kept)
    why.insert(0, "resolved" if score.resolved else "not resolved")
    return score


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
