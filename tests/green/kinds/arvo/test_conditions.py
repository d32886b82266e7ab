"""FLBench's four conditions of a locate task: their ids, what each task message says it grants,
and what a PoC run shows the agent where the condition withholds the file."""

from __future__ import annotations

import base64
import hashlib
from datetime import UTC, datetime

import pytest

from services.green.kinds.arvo.builds.runs import InputRun
from services.green.kinds.arvo.conditions import CONDITIONS, PLAIN, parse_locate_id
from services.green.kinds.arvo.kind import ArvoKind, paths_of
from services.green.kinds.arvo.poc_runs import PocRunner
from services.green.kinds.arvo.prompt import describe_task
from services.green.kinds.registry import bug_of
from services.shared.protocol import RcaTask, TaskLimits


@pytest.mark.parametrize(
    ("given", "canonical"),
    [
        ("10055", "10055"),
        ("010055", "10055"),
        ("10055-main", "10055-main"),
        ("010055-Static-Only", "10055-static-only"),
        ("10055-no-poc-file", "10055-no-poc-file"),
        ("10055-no-source", "10055-no-source"),
        ("arvo:10055-main", "10055-main"),
    ],
)
def test_a_condition_is_named_in_the_id(given, canonical):
    assert ArvoKind.canonical(given) == canonical
    assert bug_of("arvo", canonical) == "arvo:10055"  # one bug, whatever the condition


@pytest.mark.parametrize("bad", ["10055-l2", "10055-mian", "10055-", "-main", "x-main", "1-main-x"])
def test_other_suffixes_are_refused_with_a_sentence(bad):
    with pytest.raises(ValueError, match=r"condition|not an ARVO id"):
        ArvoKind.canonical(bad)


def test_the_plain_id_keeps_the_kinds_own_condition():
    assert parse_locate_id("10055") == ("10055", PLAIN)
    assert (PLAIN.source, PLAIN.report, PLAIN.poc_file, PLAIN.run_poc) == (True, True, False, False)


def task(name: str) -> RcaTask:
    c = CONDITIONS[name]
    return RcaTask(
        task_id="t-1",
        token="tok_123456",
        green_url="http://g",
        paths=paths_of(c),
        offers=["run_poc"] if c.run_poc else [],
        limits=TaskLimits(
            max_steps=40, command_timeout_s=60, deadline=datetime(2026, 1, 1, tzinfo=UTC)
        ),
    )


@pytest.mark.parametrize("name", list(CONDITIONS))
def test_each_task_message_says_what_its_condition_grants(name):
    c = CONDITIONS[name]
    text = describe_task(task(name), "libfoo", condition=c)
    assert f"condition `{name}`" in text
    assert ("/workspace/error.txt" in text) == c.report
    assert ("/workspace/src-vul/libfoo" in text) == c.source
    assert ("`/workspace/poc`" in text) == c.poc_file
    assert ("`run_poc` (no argument)" in text) == c.run_poc
    assert "/workspace/shared/loc.json" in text
    assert "you never run the crashing input yourself" in text


POC = b"<a>&#" + b"9" * 40 + b";</a>"


def report_of(poc: bytes) -> str:
    sha1 = hashlib.sha1(poc).hexdigest()
    return (
        "==1==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x6020\n"
        "    #0 0x1 in xml_decode_entity /src/xmlmini/src/entity.c:71:13\n"
        "SUMMARY: AddressSanitizer: heap-buffer-overflow /src/xmlmini/src/entity.c:71:13\n"
        f"MS: 0 ; base unit: {hashlib.sha1(b'seed').hexdigest()}\n"
        f"{','.join(f'0x{b:x}' for b in poc)},\n"
        f"{poc.decode()}\n"
        f"artifact_prefix='./'; Test unit written to ./crash-{sha1}\n"
        f"Base64: {base64.b64encode(poc).decode()}\n"
        f"sha256 of the input: {hashlib.sha256(poc).hexdigest()}\n"
    )


def run(poc: bytes) -> InputRun:
    return InputRun(
        build="run_poc",
        input="poc",
        exit_code=1,
        crashed=True,
        sanitizer="AddressSanitizer: heap-buffer-overflow",
        stdout=f"parsed: {poc.decode()}",
        output=report_of(poc),
    )


@pytest.mark.parametrize("name", ["no-poc-file"])
def test_a_run_shows_nothing_of_a_withheld_poc(name):
    shown = PocRunner(None, POC, CONDITIONS[name]).shown(run(POC))  # type: ignore[arg-type]
    assert "heap-buffer-overflow" in shown and "entity.c:71" in shown
    for secret in (
        POC.decode(),
        base64.b64encode(POC).decode(),
        hashlib.sha1(POC).hexdigest(),
        hashlib.sha256(POC).hexdigest(),
        hashlib.md5(POC).hexdigest(),
        "0x3c,0x61",
    ):
        assert secret not in shown, secret
    assert "stdout is not shown" in shown


@pytest.mark.parametrize("name", ["main", "no-source"])
def test_a_run_shows_all_where_the_file_is_the_agents(name):
    shown = PocRunner(None, POC, CONDITIONS[name]).shown(run(POC))  # type: ignore[arg-type]
    assert f"parsed: {POC.decode()}" in shown and base64.b64encode(POC).decode() in shown
