"""Why a command lost its container, as the engine tells it: the agent's doing or infra.

The rule (docs/scoring.md, "Whose failure is it"): a container that stopped by itself under
the agent's command is the agent's failure (:class:`AgentFault`): nothing but the agent's
commands runs inside, and its pid 1 (the keeper) cannot be signalled from there. It is infra
(:class:`SandboxError`) when the container vanished, the engine reports an error of its own,
the engine was asked to kill or stop it (``docker kill``/``stop``, the engine shutting down:
its events say so), or the engine cannot be asked.

Green's own processes in the container (the kill of a command past its timeout) run as root,
out of the agent's reach, but on the container's share of the machine: an agent can fill its
process limit (then none starts) or starve them of its CPU. When such a kill does not end by its
deadline (:class:`~services.sandbox.base.ExecFailed`), :func:`unstoppable` reads the container's
counters from the engine, kills it through the engine, and charges the agent only when the
container was at one of its limits, which only the agent's processes can take it to.

A shell session lost while the container runs (unpaused, no engine error, nobody asked the
engine to kill or stop it, still running a moment later) and the engine answers
(:class:`SessionKilled`) is the agent's too (``session_killed``): after each command
nothing but pid 1 is left running, so only the agent's commands, or what they changed in the
container (its shell, say), can have ended the session or stopped a new one from starting.
"""

from __future__ import annotations

import time

import docker.errors
from docker import APIClient

from services.sandbox.base import AgentFault, ExecFailed, SandboxError
from services.sandbox.docker.errors import ENGINE_ERRORS, engine_error

CPU_SAMPLE_S = 0.5
"""Seconds between the two readings of a container's CPU time that tell whether it is busy."""


class SessionKilled(SandboxError):
    """The shell session ended before a command started on a new one, or a new session died
    before answering, in a sandbox where sessions had started: :func:`diagnose` decides whose."""


def raise_if_stopped(api: APIClient, container_id: str, name: str, wait_s: float = 1.0) -> None:
    """Raise SandboxError when the container stops within ``wait_s`` (its pid 1 died with the
    session); return when it keeps running or the engine cannot tell."""
    try:
        api.wait(container_id, timeout=wait_s, condition="not-running")
    except docker.errors.NotFound as e:
        raise SandboxError(f"{name} is gone: {e.explanation}") from e
    except ENGINE_ERRORS:
        return  # still running (the wait timed out), or unknown: the next command sees
    raise SandboxError(f"{name} stopped while the command ran")


def diagnose(
    api: APIClient, container_id: str, name: str, error: SandboxError, *, memory: str, since: int
) -> Exception:
    """The exception a lost command should raise: ``error`` (or a more precise SandboxError)
    for infra, AgentFault for the agent. ``since``: when the container was created (epoch s)."""
    state = _state(api, container_id, name, error)
    if isinstance(state, Exception):
        return state
    if isinstance(error, SessionKilled) and _running_quietly(state):
        # The session may have ended because the engine is stopping the container: its state
        # lags behind a kill, so the engine's events and a short wait decide first.
        if not killed_through_engine(api, container_id, since) and _keeps_running(
            api, container_id
        ):
            return AgentFault(
                "session_killed",
                "the task's shell session was killed and no new one could be started, while the "
                "container kept running: the agent's commands killed it or broke its shell",
            )
        state = _state(api, container_id, name, error)
        if isinstance(state, Exception):
            return state
    if state.get("Running") or state.get("Error"):
        return SandboxError(f"{error} (engine: {state.get('Error') or 'still running'})")
    if killed_through_engine(api, container_id, since):
        return SandboxError(f"{error} (it was killed or stopped through the engine)")
    if state.get("OOMKilled"):
        return AgentFault(
            "memory_limit",
            f"the task's commands hit the memory limit ({memory}); the container was killed",
        )
    return AgentFault(
        "container_died",
        f"the task container stopped during the agent's command "
        f"(exit code {state.get('ExitCode')})",
    )


def _state(api: APIClient, container_id: str, name: str, error: SandboxError) -> dict | Exception:
    """The container's state as the engine tells it, or the infra exception when it cannot."""
    try:
        return api.inspect_container(container_id)["State"]
    except docker.errors.NotFound:
        return SandboxError(f"{name} was removed from outside: {error}")
    except ENGINE_ERRORS as e:
        return engine_error(e, f"{error}; the engine cannot be asked why")


def _keeps_running(api: APIClient, container_id: str, wait_s: float = 1.0) -> bool:
    """Still running ``wait_s`` later (a container being stopped is not)."""
    try:
        api.wait(container_id, timeout=wait_s, condition="not-running")
    except docker.errors.NotFound:
        return False
    except ENGINE_ERRORS:
        return True  # the wait timed out: it runs on
    return False


def _running_quietly(state: dict) -> bool:
    """Running, not paused or restarting, no error of the engine's own."""
    bad = ("Paused", "Restarting", "Dead", "OOMKilled")
    return (
        bool(state.get("Running")) and not state.get("Error") and not any(state.get(k) for k in bad)
    )


def killed_through_engine(api: APIClient, container_id: str, since: int) -> bool:
    """Did anyone ask the engine to kill or stop this container? A death from inside leaves
    only ``die`` (and ``oom``) events. When the engine cannot tell: True (not shown to be the
    agent's doing). The engine answers from its last 256 events only (each exec adds three, on
    every container): asked right after the failure, as the diagnosis does, a kill or stop
    behind it is among them unless hundreds of other events came between."""
    try:
        events = api.events(
            since=since,
            until=int(time.time()) + 1,
            filters={"container": container_id, "event": ["kill", "stop"]},
            decode=True,
        )
        return any(True for _ in events)
    except ENGINE_ERRORS:
        return True


def kill_failed_in_a_live_container(api: APIClient, container_id: str, since: int) -> bool:
    """Did green's kill of a command fail while the container lives on, nobody having asked the
    engine to kill or stop it? Only then is the command unstoppable (:func:`unstoppable`).
    The container's state lags behind its death: a kill that failed because the container is
    stopping ("cannot exec in a stopped state": a ``docker kill``, its memory limit) can find it
    still running, so it must still run a moment later, and the engine's events must name no
    kill or stop; otherwise the command was lost with its container (:func:`diagnose`)."""
    return _keeps_running(api, container_id) and not killed_through_engine(api, container_id, since)


def unstoppable(
    api: APIClient, container_id: str, name: str, error: ExecFailed, *, pids: int, cpus: float
) -> Exception:
    """Green could not stop the agent's command (``error``: its kill did not run, or not to its
    end in time). The container's counters are read, then it is killed through the engine (no
    exec in it is waited for again); the exception for the task: AgentFault when the container
    was at one of its limits (``pids``, its memory, ``cpus``), SandboxError (infra) otherwise."""
    limit = at_a_limit(api, container_id, pids=pids, cpus=cpus)
    try:
        api.kill(container_id)
    except docker.errors.NotFound as e:
        return SandboxError(f"{name} is gone: {e.explanation}")
    except docker.errors.APIError:
        pass  # 409: no longer running
    except ENGINE_ERRORS as e:
        return engine_error(e, f"{error}; the container could not be killed")
    if limit is None:
        return SandboxError(
            f"{error}: green could not stop the command, and the container was at none of its "
            "limits (the engine was slow); the container was killed"
        )
    reason, what = limit
    return AgentFault(
        reason,
        f"the agent's command could not be stopped: the container was at {what}, so green's "
        "kill could not run; the container was killed",
    )


def at_a_limit(
    api: APIClient, container_id: str, *, pids: int, cpus: float
) -> tuple[str, str] | None:
    """(reason, what) when the container is at its process or memory limit, or uses up its CPU
    share (two readings :data:`CPU_SAMPLE_S` apart: 90 % of it busy, or its quota run out);
    None when it is at none (a busy host slows green's process without it), or the engine
    cannot tell."""
    first = _stats(api, container_id)
    if first is None:
        return None
    running = int((first.get("pids_stats") or {}).get("current") or 0)
    if pids and running >= pids - 8:
        return "pids_limit", f"its process limit ({running} of {pids} processes)"
    memory = first.get("memory_stats") or {}
    inner = memory.get("stats") or {}
    used = int(memory.get("usage") or 0) - int(
        inner.get("total_inactive_file", inner.get("inactive_file", 0)) or 0
    )
    ceiling = int(memory.get("limit") or 0)
    if ceiling and used >= 0.95 * ceiling:
        return "memory_limit", f"its memory limit ({used:,} of {ceiling:,} bytes)"
    started = time.monotonic()
    time.sleep(CPU_SAMPLE_S)
    second = _stats(api, container_id)
    if second is None:
        return None
    busy = (_cpu_ns(second) - _cpu_ns(first)) / 1e9 / (time.monotonic() - started)
    throttled = _throttled(second) - _throttled(first)
    if busy >= 0.9 * cpus or throttled > 0:  # its quota ran out: its share is all used
        return "cpu_limit", f"its CPU limit ({busy:.2f} of {cpus:g} CPU busy)"
    return None


def _stats(api: APIClient, container_id: str) -> dict | None:
    try:
        return api.stats(container_id, stream=False, one_shot=True)
    except ENGINE_ERRORS:
        return None


def _throttled(stats: dict) -> int:
    """Periods in which the container used up its CPU quota (cgroup ``throttled_periods``)."""
    return int(
        ((stats.get("cpu_stats") or {}).get("throttling_data") or {}).get("throttled_periods") or 0
    )


def _cpu_ns(stats: dict) -> int:
    return int(((stats.get("cpu_stats") or {}).get("cpu_usage") or {}).get("total_usage") or 0)
