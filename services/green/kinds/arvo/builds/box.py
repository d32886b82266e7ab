"""A judging container: a fresh container of one build of a task, green's own, never the agent's.

Inputs run on it one at a time (:meth:`JudgeBox.run`), a patch is applied and built in it
(:meth:`JudgeBox.build`), its fuzz target is fuzzed for a bounded number of runs
(:meth:`JudgeBox.fuzz`), and its ``/out`` can be taken out (:meth:`JudgeBox.read_out`). Every
step has a time bound (:class:`Bounds`); the container has the limits of a task container (no
network, memory, CPU, processes, disk) and its output is capped.

Whose failure (``docs/scoring.md``, "Whose failure is it"): what the judged input or patch does
(a hang, a crash, a build that fails or loops, a container it fills or stops) is a verdict, never
an exception; the engine failing (the container gone, the engine unreachable) raises
:class:`~services.sandbox.base.SandboxError`, which ends the task as infra.
"""

from __future__ import annotations

import contextlib
import posixpath
import re
import shlex
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from pydantic import BaseModel

from services.green.kinds.arvo.builds.runs import SCRATCH, InputRun, read_run, run_script
from services.sandbox.base import AgentFault, Sandbox, SandboxProvider, SandboxSpec
from services.shared.commands import CommandResult
from services.shared.text import clip_middle
from services.swebench.judge import apply_patch

OUTPUT_LIMIT = 1 << 20
"""Bytes of output kept from one step (a sanitizer report must never be cut)."""
BUILD_LOG_KEEP = 4000
"""Characters of a failed build's log stored with the verdict."""
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


class JudgeBox:
    """One fresh container of a build (``build``: ``vulnerable``, ``fixed``, ``patched``)."""

    def __init__(self, sandbox: Sandbox, build: str, project: str | None, bounds: Bounds) -> None:
        self.sandbox, self.build_name, self.project, self.bounds = sandbox, build, project, bounds
        self.workdir = f"/src/{project}" if project else "/src"
        self._inputs = 0

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
    ) -> JudgeBox:
        """A started container of ``image``; the caller closes it (:meth:`close`).
        ``task_id``: the task it judges (green's sweeps keep it while the task lives)."""
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
            agent_uid=None,  # green's own container: it applies, builds and runs as root
        )
        return cls(await provider.create(spec), build, project, bounds)

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
    async def closing(self) -> AsyncIterator[None]:
        """Remove the container on leaving. When the body failed (the engine went away), its
        error is the one that counts: a removal that fails then is left to green's sweep of
        the containers of tasks no longer live."""
        try:
            yield
        except BaseException:
            with contextlib.suppress(Exception):
                await self.close()
            raise
        await self.close()

    async def replace_out(self, archive: bytes) -> None:
        """Put a build's ``/out`` (a tar, :meth:`read_out`) in place of this image's."""
        result = await self._exec("rm -rf /out && mkdir -p /out", 120)
        if result.exit_code != 0:
            raise RuntimeError(f"cannot empty /out: {result.output[-500:]}")
        await self.sandbox.put_archive("/out", archive)

    def image_facts(self) -> dict[str, object]:
        """The container's image by digest, where the provider can say (blocking)."""
        facts = getattr(self.sandbox, "image_facts", None)
        return facts() if facts else {}

    async def _exec(self, script: str, timeout: float) -> CommandResult:
        return await self.sandbox.exec(script, timeout)

    async def run(self, data: bytes, name: str) -> InputRun:
        """Run one input (``name`` is how the record calls it) on this build."""
        self._inputs += 1
        folder = f"{SCRATCH}/inputs"
        file = f"input-{self._inputs}"
        try:
            await self.sandbox.put_files(folder, {file: data})
            result = await self._exec(
                run_script(f"{folder}/{file}", self.workdir), self.bounds.run_s
            )
        except AgentFault as fault:
            return _stopped(self.build_name, name, fault)
        return read_run(result, self.build_name, name, self.project)

    async def build(self, patch: str) -> BuildStep:
        """Apply ``patch`` to the project (``git apply``, else ``patch -p1``) and rebuild it."""
        try:
            applied, log = await apply_patch(
                self.sandbox, patch, workdir=self.workdir, name="fix.patch"
            )
            if not applied:
                return BuildStep(applied=False, detail=clip_middle(log.strip(), BUILD_LOG_KEEP))
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
                "and was stopped",
            )
        if result.exit_code != 0:
            return BuildStep(applied=True, detail=compiler_message(result.output))
        return BuildStep(applied=True, built=True)

    async def fuzz(self, fuzzer: str, seeds: dict[str, bytes]) -> FuzzFinding:
        """Fuzz this build's ``fuzzer`` (``/out/<name>``) from ``seeds`` for ``fuzz_runs``
        inputs (seed 1: the same build explores the same inputs); its first failing input."""
        b = self.bounds
        d = f"{SCRATCH}/fuzz"
        try:
            await self.sandbox.put_files(
                f"{d}/seeds", {f"seed-{i}": data for i, data in enumerate(seeds.values())}
            )
            script = f"""mkdir -p {d}/work {d}/found && cd {shlex.quote(self.workdir)} || exit 96
( ulimit -f 65536; exec {shlex.quote(posixpath.join("/out", fuzzer))} -runs={b.fuzz_runs} -seed=1 \
-timeout={b.fuzz_input_s} -rss_limit_mb=2560 -artifact_prefix={d}/found/ \
{d}/work {d}/seeds ) >{d}/log 2>&1 </dev/null
echo "arena-exit=$?"; echo "arena-found=$(ls {d}/found | head -1)"; echo "arena-stderr:"
tail -c 65536 {d}/log"""
            result = await self._exec(script, b.fuzz_s)
            found = re.search(r"^arena-found=(\S*)$", result.output, re.M)
            name = found.group(1) if found else ""
            run = read_run(
                result, self.build_name, f"fuzzing: {name or 'no finding'}", self.project
            )
            if result.timed_out:
                return FuzzFinding(runs=b.fuzz_runs, stopped=True)
            if not name:  # it ran to its end (exit 0), or died without a finding
                return FuzzFinding(runs=b.fuzz_runs, run=None if run.exit_code == 0 else run)
            data = await self.sandbox.read_file(f"{d}/found/{name}", max_bytes=1 << 20)
        except AgentFault as fault:
            return FuzzFinding(runs=b.fuzz_runs, run=_stopped(self.build_name, "fuzzing", fault))
        return FuzzFinding(runs=b.fuzz_runs, artifact=name, data=data, run=run)

    async def read_out(self, max_bytes: int) -> bytes:
        """``/out`` as a gzip tar (what a build made), at most ``max_bytes``."""
        result = await self._exec(
            f"mkdir -p {SCRATCH} && tar -C /out -czf {SCRATCH}/out.tar.gz .", 600
        )
        if result.exit_code != 0:
            raise RuntimeError(f"cannot archive /out: {result.output[-500:]}")
        return await self.sandbox.read_file(f"{SCRATCH}/out.tar.gz", max_bytes=max_bytes)


def compiler_message(log: str) -> str:
    """What a failed build said: its error lines first (the compiler's messages), then the
    log's tail."""
    errors = list(dict.fromkeys(m.group(0).strip() for m in _COMPILER_ERROR.finditer(log)))
    head = "\n".join(errors[:12])
    tail = clip_middle(log.strip()[-BUILD_LOG_KEEP:], BUILD_LOG_KEEP)
    return f"{head}\n--- end of the build log ---\n{tail}" if head else tail
