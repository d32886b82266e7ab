"""Run the ReAct agent on SWE-bench instances and collect ``preds.json``.

Per instance: one container of the instance's image (repository at ``/testbed``, no network),
the agent with the SWE toolset and prompt, then the patch (``git diff`` against the base
commit, test files excluded), written to ``preds.json`` as soon as the instance ends. The
container is always removed. Instances already in ``preds.json`` are skipped (resume), unless
``redo``. An instance whose run failed for a reason that is not the agent's answer (the model
endpoint failing, the container lost) gets no prediction, so a resume retries it.

Output folder: ``preds.json``, ``results.json`` (how each instance ended: status, steps, cost,
time) and ``trajectories/<instance>.react.{events.jsonl,traj.json}``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from services.purple.agent.config import AgentConfig
from services.purple.agent.loop import ReactAgent
from services.purple.llm.base import LLM, LLMReply
from services.purple.protocols import RunResult, TaskContext
from services.purple.tools.toolsets import SweToolset
from services.purple.trajectory import Trajectory
from services.sandbox.base import Sandbox, SandboxError, SandboxProvider, SandboxSpec
from services.shared.files import write_json_atomic
from services.shared.logging import get_logger
from services.swebench.activation import resolve_activate
from services.swebench.environment import SandboxEnvironment
from services.swebench.instances import (
    WORKDIR,
    SweInstance,
    image_name,
    issue_description,
    swe_paths,
)
from services.swebench.judge import PatchUnavailable, extract_patch
from services.swebench.predictions import load_predictions, prediction, write_predictions

log = get_logger(__name__)

InstanceStatus = Literal["submitted", "limits", "format_errors", "error", "infra_error", "skipped"]
Observer = Callable[..., None]
"""``observer(instance_id, **fields)``: progress updates (state, steps, cost, ...)."""


class RunConfig(BaseModel):
    """How a batch is run (the agent's own limits are in :class:`AgentConfig`)."""

    model_config = ConfigDict(extra="forbid")

    output_dir: Path = Path("swebench_runs/default")
    """preds.json, results.json and trajectories/ go here."""
    model_name_or_path: str = ""
    """Written with every prediction; default: the model's name."""
    image_template: str | None = None
    """Image per instance, ``{id}`` = docker-compatible id; default: the instance's own
    image_name, else swebench/sweb.eval.x86_64.{id}:latest."""
    activate: str = "auto"
    """Python environment activation before each command: auto (conda testbed when present),
    none, or a command."""
    workdir: str = WORKDIR
    """Where the repository is in the image."""
    workers: int = Field(1, ge=1)
    """Instances run at once."""
    command_timeout_s: float = Field(300.0, gt=0)
    """Timeout of one command in the container."""
    command_limit: int | None = Field(None, ge=2)
    """Most commands per instance (None: only the agent's step limit)."""
    memory: str = "4g"
    """Memory limit of a container (docker syntax)."""
    cpus: float = Field(2.0, gt=0)
    """CPU limit of a container."""
    include_hints: bool = False
    """Show the dataset's hints_text to the agent (not done in standard SWE-bench runs)."""
    redo: bool = False
    """Run instances that already have a prediction again (default: skip them)."""


class InstanceResult(BaseModel):
    instance_id: str
    status: InstanceStatus
    reason: str = ""
    image: str = ""
    steps: int = 0
    commands: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    duration_s: float = 0.0
    patch_lines: int = 0
    """Added plus removed lines of the extracted patch."""
    trajectory_path: str | None = None


class _ObservedLLM:
    """Passes queries through, reporting each reply (for the live progress)."""

    def __init__(self, llm: LLM, on_reply: Callable[[LLMReply], None]) -> None:
        self.llm, self.on_reply, self.name = llm, on_reply, llm.name

    async def query(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> LLMReply:
        reply = await self.llm.query(messages, tools)
        self.on_reply(reply)
        return reply

    def serialize(self) -> dict[str, Any]:
        fn = getattr(self.llm, "serialize", None)
        return fn() if callable(fn) else {"class": type(self.llm).__name__, "name": self.name}


def count_patch_lines(patch: str) -> int:
    return sum(
        1
        for line in patch.splitlines()
        if line[:1] in "+-" and not line.startswith(("+++ ", "--- "))
    )


def _sandbox_spec(iid: str, image: str, config: RunConfig) -> SandboxSpec:
    """The instance's container: its image, no network, the repository as working directory."""
    return SandboxSpec(
        image=image,
        task_id=f"swebench-{iid}",
        ref_id=iid,
        network=False,
        workdir=config.workdir,
        memory=config.memory,
        cpus=config.cpus,
        labels={"arena.kind": "swebench"},
        writable=(config.workdir,),
    )


async def _run_agent(
    sandbox: Sandbox,
    instance: SweInstance,
    llm: LLM,
    agent_config: AgentConfig,
    config: RunConfig,
    traj_dir: Path,
) -> RunResult:
    """The agent with the SWE toolset on the instance's issue, in the sandbox."""
    activate = await resolve_activate(sandbox, config.activate)
    env = SandboxEnvironment(sandbox, activate=activate, default_timeout=config.command_timeout_s)
    agent = ReactAgent(llm, agent_config, trajectory_dir=traj_dir, toolset=SweToolset())
    task = TaskContext(
        task_id=instance.instance_id,
        description=issue_description(
            instance, workdir=config.workdir, include_hints=config.include_hints
        ),
        env=env,
        paths=swe_paths(config.workdir),
        max_commands=config.command_limit,
        command_timeout_s=config.command_timeout_s,
    )
    return await agent.run(task)


def _with_run(result: InstanceResult, run: RunResult) -> InstanceResult:
    """The result with how the agent's run ended and what it used."""
    return result.model_copy(
        update={
            "status": run.status,
            "reason": run.reason,
            "steps": run.stats.steps,
            "commands": run.stats.commands,
            "tokens_in": run.stats.tokens_in,
            "tokens_out": run.stats.tokens_out,
            "cost": run.stats.cost,
            "trajectory_path": run.trajectory_path,
        }
    )


async def run_instance(
    instance: SweInstance,
    *,
    llm: LLM,
    agent_config: AgentConfig,
    config: RunConfig,
    provider: SandboxProvider,
    observer: Observer | None = None,
) -> tuple[InstanceResult, str | None]:
    """Run the agent on one instance in its own container; returns the result and the patch
    (None when no prediction should be written)."""
    iid = instance.instance_id
    notify = observer or (lambda *_a, **_k: None)
    image = image_name(instance, config.image_template)
    result = InstanceResult(instance_id=iid, status="infra_error", image=image)
    start = time.monotonic()
    usage = {"steps": 0, "cost": 0.0}

    def on_reply(reply: LLMReply) -> None:
        usage["steps"] += 1
        usage["cost"] += reply.cost
        notify(iid, state="running", steps=usage["steps"], cost=usage["cost"])

    traj_dir = config.output_dir / "trajectories"
    for old in traj_dir.glob(f"{Trajectory.stem(iid, 'react')}.*"):
        old.unlink()  # a retried instance starts a new trajectory
    notify(iid, state="starting")
    sandbox: Sandbox | None = None
    patch: str | None = None
    try:
        sandbox = await provider.create(_sandbox_spec(iid, image, config))
        notify(iid, state="running")
        run = await _run_agent(
            sandbox, instance, _ObservedLLM(llm, on_reply), agent_config, config, traj_dir
        )
        result = _with_run(result, run)
        notify(iid, state="extracting")
        try:
            extracted = (await extract_patch(sandbox, instance, workdir=config.workdir)).patch
        except PatchUnavailable as exc:  # the agent broke its repository: an empty answer
            extracted, result.reason = "", str(exc)
        result.patch_lines = count_patch_lines(extracted)
        if run.status != "error":  # an answer (even an empty one): it becomes a prediction
            patch = extracted
    except Exception as exc:  # the container or the engine: not the agent's answer
        result.status = "infra_error"
        result.reason = f"{type(exc).__name__}: {exc}"
        log.warning("swebench instance failed", instance_id=iid, error=result.reason[:500])
    finally:
        if sandbox is not None:
            try:
                await sandbox.remove()
            except SandboxError as exc:
                log.warning("cannot remove container", instance_id=iid, error=str(exc))
        result.duration_s = round(time.monotonic() - start, 3)
    notify(
        iid,
        state="done" if patch is not None else "failed",
        status=result.status,
        patch_lines=result.patch_lines,
        steps=result.steps,
        cost=result.cost,
    )
    return result, patch


async def run_batch(
    instances: list[SweInstance],
    *,
    llm: LLM,
    agent_config: AgentConfig,
    config: RunConfig,
    provider: SandboxProvider,
    observer: Observer | None = None,
) -> list[InstanceResult]:
    """Run the instances (``config.workers`` at once); ``preds.json`` and ``results.json``
    are rewritten after every instance, so an interrupted batch resumes where it stopped."""
    out = config.output_dir
    out.mkdir(parents=True, exist_ok=True)
    preds_path, results_path = out / "preds.json", out / "results.json"
    preds = load_predictions(preds_path)
    results = _load_results(results_path)
    model_name = config.model_name_or_path or llm.name
    notify = observer or (lambda *_a, **_k: None)
    todo: list[SweInstance] = []
    finished: list[InstanceResult] = []
    for inst in instances:
        if not config.redo and inst.instance_id in preds:
            notify(inst.instance_id, state="skipped")
            finished.append(InstanceResult(instance_id=inst.instance_id, status="skipped"))
        else:
            notify(inst.instance_id, state="queued")
            todo.append(inst)
    gate = asyncio.Semaphore(config.workers)

    async def one(inst: SweInstance) -> None:
        async with gate:
            result, patch = await run_instance(
                inst,
                llm=llm,
                agent_config=agent_config,
                config=config,
                provider=provider,
                observer=observer,
            )
        if patch is not None:
            preds[inst.instance_id] = prediction(inst.instance_id, model_name, patch)
            write_predictions(preds_path, preds)
        results[inst.instance_id] = result.model_dump(mode="json")
        write_json_atomic(results_path, dict(sorted(results.items())))
        finished.append(result)

    await asyncio.gather(*(one(i) for i in todo))
    order = {i.instance_id: n for n, i in enumerate(instances)}
    return sorted(finished, key=lambda r: order.get(r.instance_id, 0))


def _load_results(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}
