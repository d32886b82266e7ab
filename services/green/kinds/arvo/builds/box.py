"""A judging container: a fresh container of one build of a task, green's own, never the agent's.

Inputs run on it one at a time (:meth:`JudgeBox.run`), a patch is applied and built in it
(:meth:`JudgeBox.build`), its fuzz target is fuzzed for a bounded number of runs
(:meth:`JudgeBox.fuzz`), and its ``/out`` can be taken out (:meth:`JudgeBox.read_out`). Every
step has a time bound (:class:`Bounds`); the container has the limits of a task container (no
network, memory, CPU, processes, disk) and its output is capped.

Whose code runs as whom (``docs/security.md``, "The judging containers"): whatever the agent
wrote (the patched build, the input) runs as the task container's agent uid, through the same
session (:mod:`services.sandbox.shell_scripts`): its driver, the kills and the disk scans are
root's, out of its reach. Green's inputs are copied into a folder of root's (``0711``, a fresh
random name per box and per input), never into a path the code can replace; a run's stdout
and stderr go to files of the agent's own folder that a second command frames once every
process of the run is dead (the exit status is the driver's ``wait``); the corpus and the PoC
run in a random order. A building box hands the agent's uid ``/src``, ``/out`` and ``/work``.

Whose failure (``docs/scoring.md``, "Whose failure is it"): what the judged input or patch does
(a hang, a crash, a build that fails or loops, a container it fills or stops) is a verdict, never
an exception; the engine failing (the container gone, the engine unreachable) raises
:class:`~services.sandbox.base.SandboxError`, which ends the task as infra.
"""

from __future__ import annotations

import contextlib
import posixpath
import re
import secrets
import shlex
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from pydantic import BaseModel

from services.green.kinds.arvo.builds.patching import NotApplied, apply_unified
from services.green.kinds.arvo.builds.runs import InputRun, frame_part, read_run, run_part
from services.sandbox.base import AgentFault, Sandbox, SandboxProvider, SandboxSpec
from services.shared.commands import CommandResult
from services.shared.text import clip_middle
from services.swebench.judge import apply_patch

OUTPUT_LIMIT = 1 << 20
"""Bytes of output kept from one step (a sanitizer report must never be cut)."""
BUILD_LOG_KEEP = 4000
"""Characters of a failed build's log stored with the verdict."""
FRAME_S = 30.0
"""Seconds the framing of a run's outputs may take (a trivial command: past it, the run's own
processes kept the container's cleanup from ending, and the run counts as not finished)."""
BUILD_PATHS = ("/src", "/out", "/work")
"""What a building box hands the agent's uid: the trees ``arvo compile`` writes."""
_COMPILER_ERROR = re.compile(r"^.*\b(?:error|Error \d+|fatal error)\b.*$", re.M)


@dataclass(frozen=True)
class Bounds:
    """The limits of every judging step (settings: ``GREEN_JUDGE_*``)."""

    run_s: float = 60.0
    """One input on one build."""
    build_s: float = 1800.0
    """Applying a patch and ``arvo compile``."""
    fuzz_runs: int = 2000
    """Inputs a fuzzing run of a patched build tries beyond its seeds (0: no fuzzing)."""
    fuzz_s: float = 300.0
    """The whole fuzzing run."""
    fuzz_input_s: int = 10
    """libFuzzer's ``-timeout`` for one input while fuzzing."""
    memory: str = "4g"
    cpus: float = 1.0
    pids: int = 512
    disk_bytes: int | None = None
    """What a judging container may write (None: no cap)."""


class BuildStep(BaseModel):
    """A patch applied to the project and ``arvo compile`` run."""

    applied: bool
    built: bool = False
    timed_out: bool = False
    """The build ran past its bound and was stopped."""
    detail: str = ""
    """Why it did not apply or build: the tools' words (the compiler's errors first)."""


class FuzzFinding(BaseModel):
    """What a bounded fuzzing run found: nothing (``run`` None), its first failing input
    (``artifact``, ``data``), or a fuzzer that died without one (``run`` without ``artifact``:
    killed, out of memory)."""

    runs: int
    artifact: str | None = None
    """libFuzzer's artifact name (``crash-<sha1>``, ``timeout-...``, ``leak-...``)."""
    data: bytes = b""
    run: InputRun | None = None
    stopped: bool = False
    """The run itself went past ``fuzz_s`` and was stopped."""


def _stopped(build: str, name: str, fault: AgentFault) -> InputRun:
    return InputRun(
        build=build,
        input=name,
        exit_code=-1,
        output=f"the judging container stopped ({fault.reason}): {fault}",
    )


def _rows(build: str, names: list[str], after: str) -> list[InputRun]:
    return [
        InputRun(
            build=build,
            input=name,
            exit_code=-1,
            output=f"not run: the build did not finish on {after}, so the rest were not tried",
        )
        for name in names
    ]


class JudgeBox:
    """One fresh container of a build (``build``: ``vulnerable``, ``fixed``, ``patched``)."""

    def __init__(
        self, sandbox: Sandbox, build: str, project: str | None, bounds: Bounds, private: str
    ) -> None:
        self.sandbox, self.build_name, self.project, self.bounds = sandbox, build, project, bounds
        self.workdir = f"/src/{project}" if project else "/src"
        self.private = private
        """Green's folder (root's, ``0711``): the inputs, each under a fresh random name."""
        self.own = f"{private}/out"
        """The agent uid's folder: what its code writes for green to read (outputs, findings)."""
        self.fault: AgentFault | None = None
        """How the judged code ended the container (the disk cap, say): every later step is
        stopped at once, without asking the engine about a container that is gone."""

    @classmethod
    async def create(
        cls,
        provider: SandboxProvider,
        image: str,
        *,
        build: str,
        task_id: str,
        ref_id: str,
        project: str | None,
        bounds: Bounds,
        builds: bool = False,
    ) -> JudgeBox:
        """A started container of ``image``; the caller closes it (:meth:`close`).
        ``task_id``: the task it judges (green's sweeps keep it while the task lives);
        ``builds``: a patch is built in it (its trees are handed to the agent's uid)."""
        private = f"/.arena-{secrets.token_hex(8)}"
        spec = SandboxSpec(
            image=image,
            task_id=task_id,
            ref_id=ref_id,
            network=False,
            output_limit=OUTPUT_LIMIT,
            workdir=f"/src/{project}" if project else "/src",
            memory=bounds.memory,
            cpus=bounds.cpus,
            pids_limit=bounds.pids,
            disk_limit=bounds.disk_bytes,
            labels={"arena.purpose": "judge", "arena.build": build},
            writable=(f"{private}/out", *(BUILD_PATHS if builds else ())),
            private_dir=private,
            unmeasured_stops=True,
        )
        box = cls(await provider.create(spec), build, project, bounds, private)
        async with box.closing(on_error_only=True):
            # the image's own /tmp/poc is root's: the runs' copy of their input replaces it
            await box._setup("rm -rf /tmp/poc")
        return box

    @classmethod
    @asynccontextmanager
    async def open(
        cls, provider: SandboxProvider, image: str, **options: object
    ) -> AsyncIterator[JudgeBox]:
        """:meth:`create`, removed on leaving."""
        box = await cls.create(provider, image, **options)  # type: ignore[arg-type]
        async with box.closing():
            yield box

    async def close(self) -> None:
        await self.sandbox.remove()

    @asynccontextmanager
    async def closing(self, *, on_error_only: bool = False) -> AsyncIterator[None]:
        """Remove the container on leaving (only when the body failed: ``on_error_only``).
        When the body failed (the engine went away), its error is the one that counts: a
        removal that fails then is left to green's sweep of the containers of tasks no longer
        live."""
        try:
            yield
        except BaseException:
            with contextlib.suppress(Exception):
                await self.close()
            raise
        if not on_error_only:
            await self.close()

    async def _setup(self, script: str) -> None:
        """Green's own ``script`` as root, before anything of the agent's ran."""
        result = await self.sandbox.setup(script, 120)
        if result.exit_code != 0:
            raise RuntimeError(f"cannot prepare the judging container: {result.output[-500:]}")

    async def replace_out(self, archive: bytes) -> None:
        """Put a build's ``/out`` (a tar, :meth:`read_out`) in place of this image's (before
        anything else runs in the box)."""
        await self._setup("rm -rf /out && mkdir -p /out")
        await self.sandbox.put_archive("/out", archive)

    def image_facts(self) -> dict[str, object]:
        """The container's image by digest, where the provider can say (blocking)."""
        facts = getattr(self.sandbox, "image_facts", None)
        return facts() if facts else {}

    async def _exec(self, script: str, timeout: float) -> CommandResult:
        if self.fault is not None:
            raise self.fault
        try:
            return await self.sandbox.exec(script, timeout)
        except AgentFault as fault:
            self.fault = fault
            raise

    async def _put(self, folder: str, files: dict[str, bytes]) -> None:
        if self.fault is not None:
            raise self.fault
        await self.sandbox.put_files(folder, files)

    async def run(self, data: bytes, name: str) -> InputRun:
        """Run one input (``name`` is how the record calls it) on this build."""
        key = secrets.token_hex(8)
        out = f"{self.own}/{key}"
        try:
            await self._put(self.private, {key: data})
            ran = await self._exec(
                run_part(f"{self.private}/{key}", self.workdir, out), self.bounds.run_s
            )
            framed = await self._exec(frame_part(out, ran.exit_code), FRAME_S)
        except AgentFault as fault:
            return _stopped(self.build_name, name, fault)
        return read_run(_joined(ran, framed), self.build_name, name, self.project)

    async def run_all(self, inputs: dict[str, bytes]) -> list[InputRun]:
        """Run every input, in a random order (the code cannot tell which is which by when it
        runs), until one does not finish (a hanging build: the rest would only wait for their
        bounds, and are rows that say so); the runs in the order of ``inputs``."""
        names = list(inputs)
        order = names[:]
        secrets.SystemRandom().shuffle(order)
        done: dict[str, InputRun] = {}
        for i, name in enumerate(order):
            done[name] = run = await self.run(inputs[name], name)
            if run.timed_out:
                rest = order[i + 1 :]
                done.update(zip(rest, _rows(self.build_name, rest, name), strict=True))
                break
        return [done[name] for name in names]

    async def build(self, patch: str, *, image_tools: bool = False) -> BuildStep:
        """Apply ``patch`` to the project with green's own applier (:mod:`.patching`: no tool
        of the image's) and rebuild it. ``image_tools`` (the dataset's patch.diff only): a
        patch green's applier cannot read is then tried with the image's ``git apply`` and
        ``patch -p1``."""
        try:
            try:
                await apply_unified(self.sandbox, self.workdir, patch)
            except NotApplied as exc:
                if not image_tools:
                    return BuildStep(applied=False, detail=str(exc))
                applied, log = await apply_patch(
                    self.sandbox, patch, workdir=self.workdir, name="fix.patch"
                )
                if not applied:
                    detail = f"{exc}; the image's tools: {log.strip()}"
                    return BuildStep(applied=False, detail=clip_middle(detail, BUILD_LOG_KEEP))
            result = await self._exec(
                f"cd {shlex.quote(self.workdir)} && arvo compile 2>&1", self.bounds.build_s
            )
        except AgentFault as fault:
            return BuildStep(applied=True, detail=f"the build stopped its container: {fault}")
        if result.timed_out:
            return BuildStep(
                applied=True,
                timed_out=True,
                detail=f"arvo compile did not finish within {self.bounds.build_s:g} s "
                f"and was stopped\n{compiler_message(result.output)}".rstrip(),
            )
        if result.exit_code != 0:
            return BuildStep(applied=True, detail=compiler_message(result.output))
        return BuildStep(applied=True, built=True)

    async def fuzz(self, fuzzer: str, seeds: dict[str, bytes]) -> FuzzFinding:
        """Fuzz this build's ``fuzzer`` (``/out/<name>``) from ``seeds`` for ``fuzz_runs``
        inputs (seed 1: the same build explores the same inputs); its first failing input."""
        b = self.bounds
        key = secrets.token_hex(8)
        seed_dir, d = f"{self.private}/{key}", f"{self.own}/{key}"
        q = shlex.quote(d)
        try:
            await self._put(seed_dir, {f"seed-{i}": data for i, data in enumerate(seeds.values())})
            script = f"""mkdir -p {q}/work {q}/found && cd {shlex.quote(self.workdir)} || exit 96
exec >{q}/log 2>&1 </dev/null
ulimit -f 65536
exec {shlex.quote(posixpath.join("/out", fuzzer))} -runs={b.fuzz_runs} -seed=1 \
-timeout={b.fuzz_input_s} -rss_limit_mb=2560 -artifact_prefix={q}/found/ \
{q}/work {shlex.quote(seed_dir)}"""
            ran = await self._exec(script, b.fuzz_s)
            if ran.timed_out:
                return FuzzFinding(runs=b.fuzz_runs, stopped=True)
            framed = await self._exec(
                f"""echo "arena-exit={ran.exit_code}"
echo "arena-found=$(ls {q}/found 2>/dev/null | head -1)"; echo "arena-stderr:"
tail -c 65536 {q}/log""",
                FRAME_S,
            )
            found = re.search(r"^arena-found=(\S*)$", framed.output, re.M)
            name = found.group(1) if found and not framed.timed_out else ""
            run = read_run(
                _joined(ran, framed),
                self.build_name,
                f"fuzzing: {name or 'no finding'}",
                self.project,
            )
            if not name:  # it ran to its end (exit 0), or died without a finding
                return FuzzFinding(runs=b.fuzz_runs, run=None if run.exit_code == 0 else run)
            data = await self.sandbox.read_file(f"{d}/found/{name}", max_bytes=1 << 20)
        except AgentFault as fault:
            return FuzzFinding(runs=b.fuzz_runs, run=_stopped(self.build_name, "fuzzing", fault))
        return FuzzFinding(runs=b.fuzz_runs, artifact=name, data=data, run=run)

    async def read_out(self, max_bytes: int) -> bytes:
        """``/out`` as a gzip tar (what a build made), at most ``max_bytes``."""
        archive = f"{self.own}/out-{secrets.token_hex(8)}.tar.gz"
        result = await self._exec(f"tar -C /out -czf {shlex.quote(archive)} .", 600)
        if result.exit_code != 0:
            raise RuntimeError(f"cannot archive /out: {result.output[-500:]}")
        return await self.sandbox.read_file(archive, max_bytes=max_bytes)


def _joined(ran: CommandResult, framed: CommandResult) -> CommandResult:
    """A run's result: its exit status and bound (``ran``), the outputs ``framed`` printed;
    a framing that did not finish (the run's processes held the cleanup) is a run that did
    not finish."""
    if framed.timed_out:
        return CommandResult(exit_code=-1, output=ran.output, timed_out=True)
    return CommandResult(
        exit_code=ran.exit_code,
        output=framed.output,
        timed_out=ran.timed_out,
        duration_s=ran.duration_s,
    )


def compiler_message(log: str) -> str:
    """What a failed build said: its error lines first (the compiler's messages), then the
    log's tail."""
    errors = list(dict.fromkeys(m.group(0).strip() for m in _COMPILER_ERROR.finditer(log)))
    head = "\n".join(errors[:12])
    tail = clip_middle(log.strip()[-BUILD_LOG_KEEP:], BUILD_LOG_KEEP)
    return f"{head}\n--- end of the build log ---\n{tail}" if head else tail
