"""A hostile agent against its own container, through the real green, purple and containers
(issue #20, attack 1): it cannot escape the cleanup after its command and then turn its failure
into infra.

The escape: a process that forks in a loop, each child starting the next generation in a new
session and its parent exiting, so a scan of ``/proc`` always finds a pid already gone; once it
has lived two seconds it kills every shell session green opens. Today nothing of it survives its
command. And a session the agent does kill (or whose shell it breaks) is its own failure,
``session_killed``, never infra.
"""

from __future__ import annotations

import contextlib
import time

import docker.errors
import pytest

from tests.integration.helpers import submit_task, wait_terminal
from tests.integration.test_green_lifecycle import perfect_file_and_function
from tests.sandbox.test_sandbox_attacks import HIDDEN_HOLDER, STOPPER
from tests.sandbox.test_sandbox_hostile import HOPPER, LEFT
from tests.support.scripted_purple import Script, write_file_command

pytestmark = pytest.mark.docker


def test_a_fork_loop_that_escapes_cleanup_cannot_blame_infra(start_green, scripted_purple):
    purple_url, seen = scripted_purple(
        Script(
            commands=[
                write_file_command("/tmp/hop.py", HOPPER),
                "python3 /tmp/hop.py & sleep 0.5; echo started",
                "sleep 3; echo alive",
                LEFT,
            ],
            submissions=[perfect_file_and_function(900001)],
        )
    )
    # no disk cap: its watchdog's own scans would be counted as processes left (LEFT)
    green = start_green(purple_url=purple_url, container_disk_bytes=0)
    done = wait_terminal(green.url, submit_task(green.url, {"task": "arvo:900001"})["id"])
    assert done["status"] == "completed", done  # not failed as infra: nothing of it survived
    assert [r.output for r in seen.results[1:]] == ["started\n", "alive\n", "0\n"]


def test_attack_5_the_agent_cannot_replace_or_kill_what_green_runs(start_green, scripted_purple):
    """Issue #39, attack 5 through green: the agent tries to replace green's shell (``/bin/dash``,
    ``/usr/bin/bash``), add ``/etc/ld.so.preload`` and kill its session's driver; each is
    refused (they are root's), so no trojan runs between its commands and the task completes.
    (Before, it could, and a broken shell ended the task as its ``session_killed``.)"""
    purple_url, seen = scripted_purple(
        Script(
            commands=[
                "printf '#!/bin/true\\n' > /tmp/sh.new && chmod +x /tmp/sh.new",
                "cp /tmp/sh.new /bin/dash; cp /tmp/sh.new /usr/bin/bash; "
                "echo /tmp/x.so > /etc/ld.so.preload; kill -9 $PPID; echo still",
                "echo next",
            ],
            submissions=[perfect_file_and_function(900001)],
        )
    )
    green = start_green(purple_url=purple_url)
    done = wait_terminal(green.url, submit_task(green.url, {"task": "arvo:900001"})["id"])
    assert done["status"] == "completed", done
    tried = seen.results[1].output
    assert tried.count("Permission denied") == 3 and "Operation not permitted" in tried, tried
    assert tried.endswith("still\n") and seen.results[2].output == "next\n"


def test_attacks_1_to_3_end_as_the_agents_and_the_next_task_completes(
    start_green, scripted_purple, docker_client
):
    """Issue #39, attacks 1-3 through green: the agent stops every process it can while a
    command times out (green's are root's: none), tries to stop the disk scan, then holds 1 GiB
    deleted-but-open in a non-dumpable process under a 128 MiB cap. Its task ends as its own
    ``disk_limit``; the engine answers ``docker inspect`` at once, and the next task on the same
    engine completes (before: infra, a jammed engine, and the next task infra too)."""
    hostile, seen = scripted_purple(
        Script(
            commands=[
                write_file_command("/tmp/stop.py", STOPPER),
                write_file_command("/tmp/hold.py", HIDDEN_HOLDER),
                "python3 /tmp/stop.py 30 & sleep 30",  # times out (20 s)
                "python3 /tmp/stop.py 30 & python3 /tmp/hold.py 16 30",
            ],
            submissions=[perfect_file_and_function(900001)],
        )
    )
    green = start_green(purple_url=hostile, container_disk_bytes=128 * 2**20, disk_check_s=0.5)
    # 20 s: the holder must pass the cap before its command times out, and at load 20 a
    # python writer took more than 3 s to write 128 MiB (the command then just timed out)
    task = submit_task(green.url, {"task": "arvo:900001", "command_timeout_s": 20})
    done = wait_terminal(green.url, task["id"])
    assert (done["status"], done["failure_kind"], done["end_reason"]) == (
        "failed",
        "agent",
        "disk_limit",
    ), done
    assert seen.results[2].timed_out, seen.results[2]
    started = time.monotonic()
    with contextlib.suppress(docker.errors.NotFound):  # removed: the engine says so at once
        docker_client.api.inspect_container(done["container_name"])
    inspect = time.monotonic() - started
    print(f"\nafter attacks 1-3: docker inspect answered in {inspect:.3f} s")
    assert inspect < 5

    innocent, _ = scripted_purple(Script(submissions=[perfect_file_and_function(900001)]))
    task = submit_task(green.url, {"task": "arvo:900001", "purple_url": innocent})
    assert wait_terminal(green.url, task["id"])["status"] == "completed"


def test_attack_6_a_linked_loc_json_is_the_agents_and_names_no_host_path(
    start_green, scripted_purple
):
    """``ln -s loc.json loc.json`` then submit: the submission is refused with a sentence that
    names only the container path, and the task ends as the agent's (before: infra, with the
    engine's error naming ``/var/lib/docker/overlay2/<id>/merged``)."""
    purple_url, seen = scripted_purple(
        Script(
            commands=["ln -s loc.json /workspace/shared/loc.json"],
            submissions=[perfect_file_and_function(900001)],
        )
    )
    green = start_green(purple_url=purple_url)
    done = wait_terminal(green.url, submit_task(green.url, {"task": "arvo:900001"})["id"])
    assert (done["status"], done["failure_kind"]) == ("failed", "agent"), done
    [reply] = seen.submit_replies
    assert not reply.accepted
    said = " ".join(reply.errors) + str(done["error"])
    assert "/workspace/shared/loc.json is a symbolic link" in said, said
    assert "/var/lib" not in said and "overlay2" not in said, said
