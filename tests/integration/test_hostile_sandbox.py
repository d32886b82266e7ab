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

import pytest

from tests.integration.helpers import submit_task, wait_terminal
from tests.integration.test_green_lifecycle import perfect_file_and_function
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


def test_a_session_the_agent_kills_ends_as_its_own_failure(start_green, scripted_purple):
    purple_url, _ = scripted_purple(
        Script(
            commands=[
                "printf '#!/bin/true\\n' > /bin/sh.new && chmod +x /bin/sh.new",
                "mv /bin/sh.new /bin/dash; kill -9 $PPID",  # every new session now dies at once
                "echo never",
            ],
            submissions=[perfect_file_and_function(900001)],
        )
    )
    green = start_green(purple_url=purple_url)
    done = wait_terminal(green.url, submit_task(green.url, {"task": "arvo:900001"})["id"])
    assert done["status"] == "failed", done
    assert (done["failure_kind"], done["end_reason"]) == ("agent", "session_killed"), done
