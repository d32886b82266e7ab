"""What the agent is told about an ARVO task."""

from datetime import UTC, datetime

from services.green.kinds.arvo.prompt import describe_task
from services.shared.protocol import RcaTask, TaskLimits


def task() -> RcaTask:
    return RcaTask(
        task_id="t-1",
        token="tok_123456",
        green_url="http://g",
        limits=TaskLimits(
            max_steps=40, command_timeout_s=60, deadline=datetime(2026, 1, 1, tzinfo=UTC)
        ),
    )


def test_description_names_paths_protocol_schema_limits_and_token():
    text = describe_task(task(), "libfoo")
    for part in (
        "/workspace/error.txt",
        "/workspace/src-vul/libfoo",
        "/workspace/shared/loc.json",
        "execute: <shell command>",
        "submit",
        "token: tok_123456",
        "At most 40 commands",
        '"locations"',
        "line_start",
        "only the first 5 are scored",
    ):
        assert part in text, part


def test_the_arvo_id_is_named_only_when_not_masked():
    assert "arvo:" not in describe_task(task(), "libfoo")
    assert "arvo:10055" in describe_task(task(), "libfoo", arvo_id="10055")
