"""FLBench's four conditions through green, as the agent: what is in reach in the task container
(source tree, report, PoC file, the reproducer), what ``run_poc`` answers, and that where the
condition withholds the PoC file nothing purple receives carries its bytes or a hash of them."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest

from services.green.kinds.arvo.conditions import CONDITIONS
from tests.integration.helpers import OPERATOR, submit_task, wait_terminal
from tests.integration.test_hostile_purple import RecordingApp
from tests.support import web
from tests.support.fake_llm import FakeReply
from tests.support.scripted_purple import RUN_POC, Script

pytestmark = pytest.mark.docker

TASK = "900001"
PROBE = (
    "for p in /workspace/error.txt /workspace/src-vul/xmlmini/src/entity.c /workspace/poc "
    "/src/xmlmini/src/entity.c /out /tmp/poc; do [ -e $p ] && echo has:$p; done; "
    "command -v arvo || echo no-arvo"
)
LOC = {
    "reasoning": "the numeric reference decoder reads past the end",
    "locations": [{"file": "src/entity.c", "function": "xml_decode_entity", "line_start": 70,
                   "line_end": 72}],
}  # fmt: skip


@pytest.fixture
def recorded_purple(scripted_purple):
    """A scripted purple whose every received HTTP body is kept (what reaches the agent)."""

    def start(script: Script):
        recorders: list[RecordingApp] = []

        def recording(app):
            recorders.append(RecordingApp(app))
            return recorders[0]

        url, observed = scripted_purple(script, wrap=recording)
        return url, observed, recorders[0]

    return start


def secrets_of(poc: bytes) -> list[str]:
    """What would give the PoC away: its text, its base64, its hex bytes and its hashes."""
    return [
        poc.decode("latin-1")[20:60],
        base64.b64encode(poc).decode()[:40],
        ",".join(f"0x{b:x}" for b in poc[:12]),
        *(hashlib.new(a, poc).hexdigest() for a in ("md5", "sha1", "sha256")),
    ]


@pytest.mark.parametrize("name", list(CONDITIONS))
def test_each_condition_grants_what_it_says_and_run_poc_answers_as_it_says(
    name, recorded_purple, start_green, fixture_assets
):
    condition = CONDITIONS[name]
    poc = (fixture_assets / TASK / "poc").read_bytes()
    url, seen, recorder = recorded_purple(
        Script(commands=[PROBE, "base64 -w0 /workspace/poc", RUN_POC], submissions=[LOC])
    )
    green = start_green(purple_url=url)
    task = wait_terminal(green.url, submit_task(green.url, {"task": f"arvo:{TASK}-{name}"})["id"])
    assert task["status"] == "completed", task["error"]
    assert task["ref"] == f"arvo:{TASK}-{name}" and task["bug"] == f"arvo:{TASK}"

    probe = seen.results[0].output
    assert ("has:/workspace/error.txt" in probe) == condition.report
    assert ("has:/workspace/src-vul/xmlmini/src/entity.c" in probe) == condition.source
    assert ("has:/src/xmlmini/src/entity.c" in probe) == condition.source
    assert ("has:/workspace/poc" in probe) == condition.poc_file
    for never in ("has:/out", "has:/tmp/poc"):  # the agent never runs the reproducer itself
        assert never not in probe
    assert "no-arvo" in probe
    if condition.poc_file:
        assert base64.b64decode(seen.results[1].output) == poc

    description = seen.descriptions[0]
    assert f"condition `{name}`" in description
    assert ("`run_poc` (no argument)" in description) == condition.run_poc
    if condition.run_poc:
        run = seen.results[2]
        assert run.exit_code != 0 and "AddressSanitizer: heap-buffer-overflow" in run.output
        assert "xml_decode_entity" in run.output
        assert seen.refusals == []
    else:
        assert seen.refusals == [
            "this task does not offer run_poc (its task message lists what it grants)"
        ]

    commands = web.get(f"{green.url}/tasks/{task['id']}/commands", headers=OPERATOR).json()
    recorded = [c["command"] for c in commands]
    assert recorded[:2] == [PROBE, "base64 -w0 /workspace/poc"]
    assert ("run_poc" in recorded) == condition.run_poc  # a step, recorded like a command
    assert task["steps"] == len(recorded)

    received = b"\n".join(recorder.bodies).decode("utf-8", "replace")
    assert json.dumps("run_poc") in received or not condition.run_poc  # the data part's offer
    if not condition.poc_file:  # neither the task message, the report nor run_poc carries it
        for secret in secrets_of(poc):
            assert secret not in received, secret


def test_plain_arvo_ids_keep_todays_condition(scripted_purple, start_green):
    url, seen = scripted_purple(Script(commands=[PROBE, RUN_POC], submissions=[LOC]))
    green = start_green(purple_url=url)
    task = wait_terminal(green.url, submit_task(green.url, {"task": f"arvo:{TASK}"})["id"])
    assert task["status"] == "completed", task["error"]
    probe = seen.results[0].output
    assert "has:/workspace/error.txt" in probe and "has:/workspace/src-vul" in probe
    assert "has:/workspace/poc" not in probe and "has:/tmp/poc" not in probe
    assert "condition `" not in seen.descriptions[0]
    assert seen.refusals and "does not offer run_poc" in seen.refusals[0]


def call(name: str, content: str = "", **args) -> FakeReply:
    return FakeReply(content=content or f"Next: {name}.", tool_calls=[(name, args)])


def test_purples_agent_gets_run_poc_where_the_task_offers_it(llm, llm_purple, start_green):
    purple = llm_purple()
    green = start_green(purple_url=purple.url)
    llm.push(
        call("run_poc"),
        call("submit_localization", locations=LOC["locations"], reasoning=LOC["reasoning"]),
    )
    task = wait_terminal(green.url, submit_task(green.url, {"task": f"arvo:{TASK}-main"})["id"])
    assert task["status"] == "completed", task["error"]
    tools = [t["function"]["name"] for t in llm.requests[0]["tools"]]
    assert "run_poc" in tools
    assert "AddressSanitizer: heap-buffer-overflow" in str(llm.requests[1]["messages"])

    llm.push(call("submit_localization", locations=LOC["locations"], reasoning=LOC["reasoning"]))
    plain = wait_terminal(green.url, submit_task(green.url, {"task": f"arvo:{TASK}"})["id"])
    assert plain["status"] == "completed", plain["error"]
    assert "run_poc" not in [t["function"]["name"] for t in llm.requests[-1]["tools"]]
