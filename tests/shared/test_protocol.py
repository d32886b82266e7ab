"""The wire protocol: structured and plain-text forms, and how green classifies a message."""

import pytest

from services.green.a2a.requests import Assessment, ProtocolRequest, StartTask, Unknown, classify
from services.shared.a2a import Payload
from services.shared.commands import CommandResult
from services.shared.protocol import (
    Execute,
    Result,
    RunPoc,
    Submit,
    parse_data,
    parse_text_request,
    result_text,
)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("execute: ls /workspace/src-vul", Execute(command="ls /workspace/src-vul")),
        (
            "  EXECUTE:cat <<'EOF'\nmulti\nline\nEOF",
            Execute(command="cat <<'EOF'\nmulti\nline\nEOF"),
        ),
        ("submit", Submit()),
        (" Submit \n", Submit()),
        ("execute:   ", None),
        ("please execute: ls", None),
        ("submitted", None),
        ("run_poc", RunPoc()),
        (" RUN_POC\n", RunPoc()),
        ("run_poc now", None),
    ],
)
def test_plain_text_requests(text, expected):
    assert parse_text_request(text) == expected


def test_numbers_that_crossed_a2a_as_floats_are_coerced():
    r = parse_data({"kind": "result", "exit_code": 2.0, "output": "x", "duration_s": 0.5})
    assert isinstance(r, Result) and r.exit_code == 2 and isinstance(r.exit_code, int)
    with pytest.raises(ValueError):
        parse_data({"kind": "result", "exit_code": 2.5, "output": "x"})
    with pytest.raises(ValueError):
        parse_data({"kind": "nope"})


def test_result_text_says_what_was_cut_and_killed():
    text = result_text(
        Result(exit_code=-1, output="abc", truncated=True, bytes_cut=42, timed_out=True)
    )
    assert text.startswith("<returncode>-1</returncode>\n<output>abc</output>")
    assert "timed out" in text and "42 bytes" in text


@pytest.mark.parametrize(
    "payload, kind",
    [
        (
            Payload(text="execute: ls", data={"kind": "execute", "command": "ls", "token": "t"}),
            ProtocolRequest,
        ),
        (Payload(text="execute: ls\ntoken: abcdefgh"), ProtocolRequest),
        (Payload(text="submit"), ProtocolRequest),
        (Payload(text="run_poc", data={"kind": "run_poc", "token": "t"}), ProtocolRequest),
        (Payload(text="run_poc\ntoken: abcdefgh"), ProtocolRequest),
        (Payload(text="Task ID: arvo:10055"), StartTask),
        (
            Payload(text='{"participants": {"agent": "http://p"}, "config": {"task_ids": [1]}}'),
            Assessment,
        ),
        (Payload(text="hello"), Unknown),
        (Payload(text="x", data={"kind": "execute"}), Unknown),
    ],
)
def test_classify(payload, kind):
    assert isinstance(classify(payload), kind)


@pytest.mark.parametrize(
    "payload, why",
    [
        (Payload(text='{"participants": {}}'), "'participants' must map roles to URLs"),
        (Payload(text='{"participants": {"a": 1}}'), "each participant must be a URL string"),
        (Payload(text='{"participants": {"a": "http://p"}, "config": [1]}'), "'config' must be"),
        (Payload(text="Task ID: arvo:1", metadata={"purple_url": 7}), "metadata.purple_url"),
        (Payload(text="execute: id", metadata={"token": ["x"]}), "metadata.token"),
    ],
)
def test_malformed_requests_are_refused_with_a_sentence(payload, why):
    with pytest.raises(ValueError, match=why):
        classify(payload)


def test_task_ids_are_ascii_digits_only():
    # fullwidth digits are \d in Python's default regex: they must not pass as an ARVO id
    assert isinstance(classify(Payload(text="Task ID: arvo:\uff11\uff12")), Unknown)
    deep = Payload(text='{"participants":' * 100_000)
    assert isinstance(classify(deep), Unknown)  # no RecursionError


def test_token_travels_in_data_metadata_or_a_last_text_line():
    assert classify(Payload(data={"kind": "submit", "token": "a"})).token == "a"
    assert classify(Payload(text="submit", metadata={"token": "b"})).token == "b"
    req = classify(Payload(text="execute: echo hi\ntoken: secret_123"))
    assert req.token == "secret_123" and req.request.command == "echo hi"


def test_a_command_that_names_an_arvo_id_is_still_a_command():
    req = classify(Payload(text="execute: grep -r arvo:10055 ."))
    assert isinstance(req, ProtocolRequest)


def test_start_task_collects_unique_ids():
    ids = classify(Payload(text="Task ID: arvo:1 and arvo:2, again arvo:1")).task_ids
    assert list(map(str, ids)) == ["arvo:1", "arvo:2"]
    ids = classify(Payload(text="Task ID: swebench:arena__ini-1")).task_ids
    assert list(map(str, ids)) == ["swebench:arena__ini-1"]


def test_the_reply_to_execute_is_the_command_result_itself() -> None:
    """One type from the sandbox to purple: what a sandbox returns is the data part green sends
    (same field names as ever, ``kind`` "result") and what purple reads back."""
    result = CommandResult(exit_code=0, output="hi\n", duration_s=0.01)
    wire = result.model_dump()
    assert wire == {
        "kind": "result",
        "exit_code": 0,
        "output": "hi\n",
        "truncated": False,
        "bytes_cut": 0,
        "timed_out": False,
        "duration_s": 0.01,
    }
    back = parse_data(wire)
    assert type(back) is CommandResult and back == result
    assert Result is CommandResult  # the deprecated name
