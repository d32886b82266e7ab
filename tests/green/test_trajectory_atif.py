"""The converter to ATIF (services/shared/atif.py) on trajectories a hostile or an older purple
could send, and green's answer when what purple sent is no trajectory at all."""

from __future__ import annotations

import json
from typing import Any

import atif

from services.green.api.routes.tasks import _as_atif
from services.shared.atif import to_atif
from services.shared.trajectory import TrajectoryView


def _view(steps: list[dict[str, Any]], **fields: Any) -> TrajectoryView:
    base = {"task_id": "t1", "policy": "react", "status": "submitted", "files": []}
    return TrajectoryView.model_validate(
        {**base, "tokens_in": 0, "tokens_out": 0, "cost": 0.0, "steps": steps, **fields}
    )


def _valid(view: TrajectoryView) -> atif.Trajectory:
    """Converted, dumped and read back by the atif package: what a reader of the file gets."""
    return atif.Trajectory.model_validate(json.loads(json.dumps(to_atif(view).to_json_dict())))


def test_hostile_shapes_become_a_valid_document_never_an_exception() -> None:
    doc = _valid(
        _view(
            [
                {
                    "step": 1,
                    "messages": [
                        {"role": "assistant", "content": {"x": 1}, "tool_calls": 7, "t": 0.2},
                        {"role": "tool", "tool_call_id": "nobody", "content": 5, "t": 0.3},
                    ],
                    "llm_calls": [{"tokens_in": "many", "cost": "free", "t": "soon"}],
                    "other": [{"type": "report", "stacks": 3}, {"type": "candidates"}],
                },
                {
                    "step": 2,
                    "messages": [
                        {
                            "role": "assistant",
                            "content": "",
                            "tool_calls": [
                                {"id": "c1", "function": {"name": "f", "arguments": "{bad"}},
                                "not a call",
                            ],
                        }
                    ],
                },
            ]
        )
    )
    one, two = doc.steps  # the events without a time joined the turn their call began
    assert one.message == '{"x": 1}' and one.tool_calls is None
    assert one.observation.results[0].source_call_id is None  # names no call of the step
    assert one.metrics.prompt_tokens == 0 and one.metrics.cost_usd is None  # no known source
    # a reply whose model call was not recorded: neither usage nor a count of calls
    assert two.llm_call_count is None and two.metrics is None
    assert two.tool_calls[0].arguments == {}
    assert two.tool_calls[0].extra == {"raw_arguments": "{bad"}
    assert doc.final_metrics.total_prompt_tokens is None


def test_events_are_put_back_in_the_order_they_happened() -> None:
    """Within a step, purple lists messages, calls and other events apart; their ``t`` orders
    them: the compaction that began turn 2 (listed in turn 1) comes between the two turns."""
    doc = _valid(
        _view(
            [
                {
                    "step": 1,
                    "messages": [
                        {"role": "assistant", "content": "first", "t": 1.0},
                        {"role": "user", "content": "Observation: ok", "t": 1.2},
                    ],
                    "llm_calls": [
                        {"tokens_in": 10, "tokens_out": 2, "t": 0.9, "usage_reported": True}
                    ],
                    "other": [{"type": "compaction", "summary": "older turns", "t": 1.5}],
                },
                {
                    "step": 2,
                    "messages": [{"role": "assistant", "content": "second", "t": 2.0}],
                    "llm_calls": [{"tokens_in": 30, "tokens_out": 4, "t": 1.9}],
                },
            ]
        )
    )
    assert [(s.source, s.message[:6]) for s in doc.steps] == [
        ("agent", "first"),
        ("system", "contex"),
        ("agent", "second"),
    ]
    assert doc.steps[0].observation.results[0].content == "Observation: ok"  # text mode
    assert doc.final_metrics.total_prompt_tokens == 40


def test_what_is_no_trajectory_gets_a_502_with_a_sentence() -> None:
    for data in ({}, {"steps": "many"}, {"task_id": 1, "steps": [{"step": "x"}]}):
        answer = _as_atif(data)
        assert answer.status_code == 502
        assert b"not one green can convert to ATIF" in answer.body
