"""The one validator of the numbers an agent reports (execute's usage, submit's counters, the
final agent_report): whole, finite, non-negative, bounded; the agent's words clipped to a line."""

import math

import pytest
from pydantic import ValidationError

from services.shared.protocol import (
    AGENT_REASON_CHARS,
    MAX_COUNT,
    AgentReport,
    Execute,
    Submit,
    Usage,
    parse_data,
)


@pytest.mark.parametrize(
    "bad",
    [
        {"tokens_in": -1},
        {"tokens_out": MAX_COUNT + 1},
        {"cost": math.inf},
        {"cost": math.nan},
        {"cost": -0.01},
        {"cost": 1e12},
        {"steps": 1.5},
    ],
)
def test_bad_numbers_are_refused_everywhere(bad) -> None:
    with pytest.raises(ValidationError):
        Usage(**bad)
    with pytest.raises(ValidationError):
        Submit(**bad)
    with pytest.raises(ValidationError):
        parse_data({"kind": "execute", "command": "ls", "usage": bad})


def test_good_numbers_pass_and_floats_from_a2a_are_coerced() -> None:
    req = parse_data(
        {"kind": "execute", "command": "ls", "usage": {"tokens_in": 12.0, "cost": 0.5}}
    )
    assert isinstance(req, Execute) and req.usage == Usage(tokens_in=12, cost=0.5)


def test_the_agents_reason_is_one_bounded_line() -> None:
    report = AgentReport(reason="line one\nline\x00two " + "x" * 5000)
    assert "\n" not in report.reason and "\x00" not in report.reason
    assert (
        report.reason.startswith("line one line two") and len(report.reason) == AGENT_REASON_CHARS
    )


def test_a_reported_cost_is_kept_in_whole_micro_dollars() -> None:
    """A sum of prices (0.1 + 0.2 ...) read 1.0211999999999999 in green's record and the
    dashboard; a cost is kept to the micro-dollar wherever an agent reports it."""
    assert Usage(cost=1.0211999999999999).cost == 1.0212
    assert Submit(cost=0.1 + 0.2).cost == 0.3
    req = parse_data({"kind": "execute", "command": "ls", "usage": {"cost": 0.30000000000000004}})
    assert isinstance(req, Execute) and req.usage is not None and req.usage.cost == 0.3
