"""Why a command lost its container, as the engine tells it: the agent's doing or infra.

The rule (docs/scoring.md, "Whose failure is it"): a container that stopped by itself under
the agent's command is the agent's failure (:class:`AgentFault`): nothing but the agent's
commands runs inside, and its pid 1 (the keeper) cannot be signalled from there. It is infra
(:class:`SandboxError`) when the container vanished, the engine reports an error of its own,
the engine was asked to kill or stop it (``docker kill``/``stop``, the engine shutting down:
its events say so), or the engine cannot be asked.

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

from services.sandbox.base import AgentFault, SandboxError
from services.sandbox.docker.errors import ENGINE_ERRORS, engine_error


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
    agent's doing)."""
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
