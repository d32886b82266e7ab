"""A hostile purple against what green records and shows of its task: issue 39, attacks 8 and 13.

Real green, the real purple service with a scripted policy, real containers; the operator's
`arena run` where the attack is on what it saves. Each test is one attack as the agent makes it
(through ``execute``/``submit`` and its answers to green) and fails on the code before the fix.
"""

from __future__ import annotations

import json
import re
import socket
import stat
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from services.arena.app import app as arena
from tests.integration.helpers import OPERATOR, OPERATOR_TOKEN
from tests.support import web
from tests.support.hostile_http import execute_rpc, reply_text
from tests.support.scripted_purple import Script

pytestmark = pytest.mark.docker

TASK = "arvo:900001"
HIT = {"locations": [{"file": "src/entity.c", "line_start": 1, "line_end": 1}]}
RAW = ("\x1b", "\x07", "\x00", "\u202e")
"""ESC (clears a terminal, sets its title), BEL, NUL (ends a C string), RIGHT-TO-LEFT OVERRIDE."""


@pytest.fixture
def green_database_url(database_url: str) -> str:
    """This module runs on SQLite and on PostgreSQL (which refuses a NUL in text)."""
    return database_url


def test_13_control_characters_from_commands_are_escaped_and_task_files_are_private(
    tmp_path: Path, start_green, scripted_purple, green_settings
) -> None:
    """The agent puts ESC, BEL and U+202E in its command's text and ESC, BEL, NUL and U+202E in
    its output: green's log and the task page show them escaped, and a NUL never fails green's
    write (PostgreSQL refuses it in text: the task ended as infra, at the agent's will); the
    agent itself gets its output as it was. The operator's `arena run` keeps the task's files (task.json: the ground
    truth once disclosed) readable by the operator only."""
    command = "echo '\x1b]0;owned\x07\x1b[2J' # \u202e'gnp.tohsneercs'"
    output = r"printf 'A\033[2JB\007C\000D\342\200\256E\n'"
    green = start_green()
    purple, observed = scripted_purple(Script(commands=[command, output], submissions=[HIT]))
    out = tmp_path / "results"
    args = ["run", TASK, "--green", green.url, "--purple", purple, "--run", "r", "--out", str(out)]
    res = CliRunner().invoke(
        arena, [*args, "--poll-interval", "0.2", "--api-token", OPERATOR_TOKEN]
    )
    assert res.exit_code == 0, res.output

    assert observed.results[1].output == "A\x1b[2JB\x07C\x00D\u202eE\n"  # its own, unchanged
    run = out / "r"
    [outcome] = json.loads((run / "results.json").read_text())["tasks"]
    assert outcome["status"] == "completed", outcome
    task_id = outcome["task_id"]

    log = (green_settings.log_dir / "log_test" / "arvo_900001.log").read_text("utf-8")
    assert "command.executed" in log
    assert not any(c in log for c in RAW), [c for c in RAW if c in log]
    assert r"\x1b]0;owned\x07\x1b[2J" in log and r"\u202e" in log

    page = web.get(f"{green.url}/ui/tasks/{task_id}", headers=OPERATOR).text
    assert not any(c in page for c in RAW), [c for c in RAW if c in page]
    assert "A\\x1b[2JB\\x07C\ufffdD\\u202eE" in page  # a NUL is stored as U+FFFD
    assert r"\x1b]0;owned\x07\x1b[2J" in page

    task_file = run / outcome["dir"] / "task.json"
    assert json.loads(task_file.read_text())["ground_truth"], "no ground truth disclosed"
    for name in ("task.json", "commands.json"):
        mode = stat.S_IMODE((run / outcome["dir"] / name).stat().st_mode)
        assert mode == 0o600, (name, oct(mode))


def _read_request(conn: socket.socket) -> tuple[bytes, bytes]:
    data = b""
    while b"\r\n\r\n" not in data and (chunk := conn.recv(65536)):
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = re.search(rb"(?im)^content-length:\s*(\d+)", head)
    while length and len(body) < int(length.group(1)) and (chunk := conn.recv(65536)):
        body += chunk
    return head, body


class UsesTheTaskThenHangsUp:
    """A purple that serves a real purple's card, takes green's hand-over, runs a command on
    the task with the token it came with, and then closes the connection without answering the
    hand-over: to green, a purple it could not reach."""

    def __init__(self, card: bytes, command: str = "ls /workspace") -> None:
        self.card, self.command = card, command
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.handovers: list[str] = []
        """What green answered to the command run during each hand-over."""
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            head, body = _read_request(conn)
            if head.startswith(b"GET"):
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n"
                    b"content-length: %d\r\n\r\n%s" % (len(self.card), self.card)
                )
                return
            found = {
                k: re.search(rf'"{k}":\s*"([^"]+)"', body.decode()).group(1)  # type: ignore[union-attr]
                for k in ("task_id", "token", "green_url")
            }
            r = web.post(
                found["green_url"], json=execute_rpc(found["task_id"], self.command, found["token"])
            )
            self.handovers.append(reply_text(r))

    def close(self) -> None:
        self.sock.close()


def test_8_a_purple_that_used_its_task_then_failed_the_hand_over_gets_no_second_try(
    tmp_path: Path, start_green, scripted_purple
) -> None:
    """The agent runs a command with the token of its hand-over, then lets the hand-over fail:
    the task is its failure with a reason of its own (``purple_handover_failed``, not
    ``purple_unreachable``, "never started"), and `arena run` resuming the run does not run it
    again."""
    green = start_green()
    real, _ = scripted_purple(Script())
    hostile = UsesTheTaskThenHangsUp(web.get(f"{real}/.well-known/agent-card.json").content)
    out = tmp_path / "results"
    args = ["run", TASK, "--green", green.url, "--purple", hostile.url, "--run", "r"]
    args += ["--out", str(out), "--poll-interval", "0.2", "--api-token", OPERATOR_TOKEN]
    try:
        for _ in range(2):  # the second is a resume of the same run
            res = CliRunner().invoke(arena, args)
            assert res.exit_code in (0, 1), res.output  # 1: no attempt completed
    finally:
        hostile.close()
    assert len(hostile.handovers) == 1, hostile.handovers
    assert "<returncode>0</returncode>" in hostile.handovers[0]  # its command ran
    [outcome] = json.loads((out / "r" / "results.json").read_text())["tasks"]
    assert outcome["end_reason"] == "purple_handover_failed", outcome
    assert (outcome["status"], outcome["failure_kind"], outcome["steps"]) == ("failed", "agent", 1)
    assert "did not answer its hand-over" in outcome["error"]
