"""A task's trajectory as ATIF v1.8, the Agent Trajectory Interchange Format (Harbor writes it;
Phoenix, NVIDIA NeMo and Harbor's viewer read it), built with the ``atif`` package's models.

:func:`to_atif` is the one converter from :class:`TrajectoryView` (what purple serves) to
:class:`atif.Trajectory`. Within each of purple's steps the events are put back in the order
they happened (their ``t``), then:

- a system or user message (the system prompt, the task) is a ``system`` or ``user`` step;
- each model call is an ``agent`` step: the reply's text and reasoning, its tool calls, what the
  tools answered (``observation.results``, by call id; a text-mode observation has none), the
  commands it ran (``extra.commands``) and the call's usage as the model server reported it;
- a compaction, a context window read or a retry after an overflow is a ``system`` step with
  no metrics (no model was called for it);
- the stack-trace analyst, which calls no model, has an ``agent`` step per command and per
  finding, each with ``llm_call_count: 0`` and no metrics.

Nothing is made up: a count the server did not report is absent, not 0; the cost is the
server's when it sent one, the price table's otherwise (``metrics.extra.cost_source``), and
absent when the model's price is unknown; a total is given only when every model call measured
its part.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import atif

from services.shared.trajectory import TrajectoryStep, TrajectoryView

SCHEMA_VERSION = "ATIF-v1.8"
AGENT_NAME = "arena-purple"
COMMAND_TOOL = "run_bash_cmd"
"""The tool a command ran through when its record names none."""
_DROP = ("type", "t", "step")
"""Event keys that become step structure, not a step's ``extra``."""
_KINDS = ("llm_call", "message", "command", "other")
"""The order of events that happened at the same ``t``: a call before the reply it gave."""


@dataclass
class _Turn:
    """One agent step being assembled: a model call (``llm``) and what followed it, or a
    deterministic action (``llm`` False)."""

    llm: bool
    calls: list[dict[str, Any]] = field(default_factory=list)
    message: str | None = None
    reasoning: str | None = None
    tool_calls: list[atif.ToolCall] = field(default_factory=list)
    results: list[atif.ObservationResult] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


def _ordered(step: TrajectoryStep) -> list[tuple[str, dict[str, Any]]]:
    rows = [
        (kind, row)
        for kind, rows in zip(
            _KINDS, (step.llm_calls, step.messages, step.commands, step.other), strict=True
        )
        for row in rows
    ]
    return sorted(rows, key=lambda r: _t(r[1]))  # stable: ties keep the order of _KINDS


def _t(row: dict[str, Any]) -> float:
    return _number(row.get("t"))


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _tool_call(call: dict[str, Any], n: int) -> atif.ToolCall:
    """An OpenAI tool call (``{"id", "function": {"name", "arguments"}}``) of a reply."""
    fn = call.get("function") if isinstance(call.get("function"), dict) else {}
    raw = fn.get("arguments", "{}")
    try:
        args = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        args = None
    extra = None if isinstance(args, dict) else {"raw_arguments": _text(raw)}
    return atif.ToolCall(
        tool_call_id=str(call.get("id") or f"call-{n}"),
        function_name=str(fn.get("name") or ""),
        arguments=args if isinstance(args, dict) else {},
        extra=extra,
    )


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) else 0.0


def _sum(calls: list[dict[str, Any]], key: str, measured: bool) -> int | None:
    return int(sum(_number(c.get(key)) for c in calls)) if measured else None


def _metrics(calls: list[dict[str, Any]]) -> atif.Metrics | None:
    """The usage of a step's model calls, summed, as the server reported it."""
    if not calls:
        return None
    # a trajectory from before purple marked unreported usage: its counts came from the usage
    usage = all(c.get("usage_reported", True) for c in calls)
    cached = all(isinstance(c.get("cached_tokens"), int) for c in calls)
    sources = {c.get("cost_source") for c in calls}
    priced = None not in sources
    extra: dict[str, Any] = {"seconds": round(sum(_number(c.get("duration_s")) for c in calls), 4)}
    if priced:
        extra["cost_source"] = "+".join(sorted(str(s) for s in sources))
    if not usage:
        extra["usage"] = "the server reported no usage for this call"
    return atif.Metrics(
        prompt_tokens=_sum(calls, "tokens_in", usage),
        completion_tokens=_sum(calls, "tokens_out", usage),
        cached_tokens=_sum(calls, "cached_tokens", usage and cached),
        cost_usd=round(sum(_number(c.get("cost")) for c in calls), 8) if priced else None,
        extra=extra,
    )


def _count(value: Any) -> int:
    return len(value) if isinstance(value, list) else 0


def _finding(event: dict[str, Any]) -> str:
    """What one of the analyst's (or another policy's) own events says, in a sentence."""
    kind = event.get("type")
    if kind == "report":
        return f"read the crash report ({_count(event.get('stacks'))} stack(s))"
    if kind == "candidates":
        ranked, resolved = _count(event.get("ranked")), _count(event.get("resolved"))
        return f"ranked {ranked} candidate frame(s), {resolved} found in the source"
    if kind == "value_trail":
        return f"followed the bad value to its origin: {_text(event.get('why'))}"
    return str(kind)


def _system_note(event: dict[str, Any]) -> str | None:
    """The message of an infrastructure event's ``system`` step (None: not one)."""
    kind = event.get("type")
    if kind == "compaction":
        return (
            f"context compacted: {event.get('messages_before')} messages became "
            f"{event.get('messages_after')} (estimated tokens {event.get('estimate_before')} -> "
            f"{event.get('estimate_after')}); the summary below replaced the older turns"
        )
    if kind == "context_window":
        return (
            f"context window {event.get('window')} tokens ({event.get('source')}): "
            f"compaction budget {event.get('budget')}"
        )
    if kind == "context_retry":
        return f"the server refused the request as too long; compacted and sent again: {_text(event.get('error'))}"
    return None


class _Builder:
    """Walks the events in order and closes a step as the next one begins."""

    def __init__(self) -> None:
        self.steps: list[atif.Step] = []
        self.turn: _Turn | None = None
        self.commands = 0

    def add(self, source: str, message: str, **fields: Any) -> None:
        self.close()
        self.steps.append(
            atif.Step(step_id=len(self.steps) + 1, source=source, message=message, **fields)
        )

    def close(self) -> None:
        turn, self.turn = self.turn, None
        if turn is None:
            return
        self.steps.append(
            atif.Step(
                step_id=len(self.steps) + 1,
                source="agent",
                message=turn.message or "",
                reasoning_content=turn.reasoning,
                tool_calls=turn.tool_calls or None,
                observation=atif.Observation(results=turn.results) if turn.results else None,
                metrics=_metrics(turn.calls),
                # a reply whose model call went unrecorded: how many calls is not known
                llm_call_count=len(turn.calls) if turn.calls else (None if turn.llm else 0),
                extra=turn.extra or None,
            )
        )

    def llm_call(self, call: dict[str, Any]) -> None:
        self.close()  # a model call begins a turn
        reasoning = call.get("reasoning")
        self.turn = _Turn(llm=True, calls=[call], reasoning=reasoning if reasoning else None)
        extra = {k: v for k, v in call.items() if k in ("finish_reason", "retries")}
        self.turn.extra.update(extra)

    def message(self, msg: dict[str, Any]) -> None:
        role, content = msg.get("role"), _text(msg.get("content"))
        turn = self.turn
        if role == "assistant":
            if turn is None or not turn.llm or turn.message is not None:
                self.close()  # a reply whose model call was not recorded: no usage to give
                turn = self.turn = _Turn(llm=True)
            turn.message = content
            calls = msg.get("tool_calls")
            turn.tool_calls = [
                _tool_call(c, i)
                for i, c in enumerate(calls if isinstance(calls, list) else [])
                if isinstance(c, dict)
            ]
        elif role == "tool" and turn is not None:
            ids = {c.tool_call_id for c in turn.tool_calls}
            call_id = msg.get("tool_call_id")
            turn.results.append(
                atif.ObservationResult(
                    source_call_id=call_id if call_id in ids else None, content=content
                )
            )
        elif role in ("user", "tool") and turn is not None and turn.llm:
            turn.results.append(atif.ObservationResult(content=content))  # text mode
        else:
            self.add("system" if role == "system" else "user", content)

    def command(self, cmd: dict[str, Any]) -> None:
        record = {k: v for k, v in cmd.items() if k not in ("output", *_DROP)}
        if self.turn is not None and self.turn.llm:  # its output is the tool's observation
            self.turn.extra.setdefault("commands", []).append(record)
            return
        self.close()  # a command of a policy without a model: a step of its own
        self.commands += 1
        call_id = f"command-{self.commands}"
        call = atif.ToolCall(
            tool_call_id=call_id,
            function_name=str(cmd.get("tool") or COMMAND_TOOL),
            arguments={"command": _text(cmd.get("command"))},
        )
        result = atif.ObservationResult(source_call_id=call_id, content=_text(cmd.get("output")))
        self.turn = _Turn(llm=False, message="", tool_calls=[call], results=[result])
        self.turn.extra["commands"] = [record]
        self.close()

    def other(self, event: dict[str, Any]) -> None:
        data = {k: v for k, v in event.items() if k not in _DROP}
        note = _system_note(event)
        if note is not None:
            summary = event.get("summary")
            results = [atif.ObservationResult(content=_text(summary))] if summary else None
            observation = atif.Observation(results=results) if results else None
            self.add(
                "system", note, observation=observation, extra={"event": event.get("type"), **data}
            )
        elif event.get("type") == "end":
            return  # the run's result: the trajectory's extra
        elif self.turn is not None and self.turn.llm:
            self.turn.extra.setdefault("events", []).append({"event": event.get("type"), **data})
        else:
            self.add(
                "agent",
                _finding(event),
                llm_call_count=0,
                extra={"event": event.get("type"), **data},
            )


def _final(steps: list[atif.Step]) -> atif.FinalMetrics:
    """Totals of the steps' metrics, each only when every model call measured it."""
    measured = [s.metrics for s in steps if s.llm_call_count != 0 and s.source == "agent"]

    def total(name: str) -> Any:
        values = [getattr(m, name) if m is not None else None for m in measured]
        if not values or None in values:
            return None
        return round(sum(values), 8) if name == "cost_usd" else sum(values)

    calls = sum(s.llm_call_count or 0 for s in steps)
    return atif.FinalMetrics(
        total_prompt_tokens=total("prompt_tokens"),
        total_completion_tokens=total("completion_tokens"),
        total_cached_tokens=total("cached_tokens"),
        total_cost_usd=total("cost_usd"),
        total_steps=len(steps),
        extra={"llm_calls": calls},
    )


def _end(view: TrajectoryView) -> dict[str, Any] | None:
    for step in reversed(view.steps):
        for event in reversed(step.other):
            if event.get("type") == "end" and isinstance(event.get("result"), dict):
                result = event["result"]
                return {k: result.get(k) for k in ("status", "reason", "duration_s")}
    return None


def to_atif(view: TrajectoryView) -> atif.Trajectory:
    """The ATIF trajectory of ``view`` (see the module's docstring for the mapping)."""
    build = _Builder()
    for step in view.steps:
        for kind, row in _ordered(step):
            getattr(build, kind)(row)
    build.close()
    notes = []
    if view.status == "working":
        notes.append("read while the agent was working: later steps are not in it")
    if not any(s.llm_call_count for s in build.steps):
        notes.append("no model was called: every agent step has llm_call_count 0 and no metrics")
    extra = {"task_id": view.task_id, "policy": view.policy, "status": view.status}
    if (end := _end(view)) is not None:
        extra["end"] = end
    return atif.Trajectory(
        schema_version=SCHEMA_VERSION,
        session_id=view.task_id,
        agent=atif.Agent(
            name=AGENT_NAME,
            version=view.agent_version or "unknown",
            model_name=view.model,
            extra={"policy": view.policy},
        ),
        steps=build.steps,
        notes="; ".join(notes) or None,
        final_metrics=_final(build.steps),
        extra=extra,
    )


def atif_json(view: TrajectoryView) -> dict[str, Any]:
    """:func:`to_atif` as the JSON object a file or an answer holds (unset fields left out)."""
    return to_atif(view).to_json_dict()
