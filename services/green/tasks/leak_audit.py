"""The leak audit of a task's agent, when the task ends: the fix in what the agent sent or said.

The channels are the agent's own: its commands (and ``run_poc`` requests), its submission (a
loc.json's reasoning and descriptions), its final words, and purple's trajectory where purple
serves it (read within a short bound: a purple that does not answer is noted, never waited on).
The kind's plan knows what gives its fix away (ARVO's locate kind: :mod:`.kinds.arvo.leaks`)
and searches the channels (:func:`services.shared.audit.find_leaks`). The result goes with the
task's scores as ``scores.leak`` (``suspected``, ``evidence``, ``scanned``); it never changes a
metric, and it is shown only with the rest of the scores' details (``disclosure``).
"""

from __future__ import annotations

import json
from typing import Any

from services.green.kinds.base import stored
from services.green.tasks.live_task import LiveTask
from services.green.tasks.runtime import TaskRuntime
from services.green.tasks.trajectory import fetch_trajectory
from services.shared.logging import get_logger

log = get_logger("services.green.tasks.leak_audit")

TRAJECTORY_TIMEOUT_S = 5.0
"""The most a task's end waits for purple's trajectory (and GREEN_TRAJECTORY_TIMEOUT_S)."""


def strings_of(value: Any) -> list[str]:
    """Every string in a JSON value (keys too), in order: the text of a trajectory or a
    submission, without JSON's escapes."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*strings_of(k), *strings_of(v))]
    if isinstance(value, list):
        return [s for v in value for s in strings_of(v)]
    return []


async def channels_of(orch: TaskRuntime, live: LiveTask) -> tuple[dict[str, str], dict[str, str]]:
    """The agent's channels by name, and why any could not be read."""
    channels: dict[str, str] = {}
    missing: dict[str, str] = {}
    rows = await orch.db.run(orch.store.commands, live.id, 0, live.max_steps + 1)
    channels["commands"] = "\n".join(r.command for r in rows)
    if live.submission is not None:
        channels["submission"] = "\n".join(strings_of(stored(live.submission)))
    if live.agent_report is not None and live.agent_report.reason:
        channels["agent's final words"] = live.agent_report.reason
    s = orch.settings
    trajectory, why = await fetch_trajectory(
        live.purple_url,
        live.id,
        s.trajectory_max_bytes,
        min(s.trajectory_timeout_s, TRAJECTORY_TIMEOUT_S),
    )
    if trajectory is not None:
        channels["trajectory"] = "\n".join(strings_of(trajectory.data))
    else:
        missing["trajectory"] = why
    return channels, missing


async def leak_audit(orch: TaskRuntime, live: LiveTask) -> dict[str, Any] | None:
    """``scores.leak`` of a task whose plan audits leaks (``plan.leaks(channels)``, blocking);
    None for the others."""
    leaks = getattr(live.plan, "leaks", None)
    if leaks is None:
        return None
    channels, missing = await channels_of(orch, live)
    evidence: list[str] = await orch.io(leaks, channels)
    if evidence:
        with live.log_context():
            log.warning("leak.suspected", evidence=json.dumps(evidence)[:2000])
    return {
        "suspected": bool(evidence),
        "evidence": evidence,
        "scanned": sorted(channels),
        "not_scanned": missing,
    }
