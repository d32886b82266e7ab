"""The shell session's framing over a transport that is not Docker: local processes on pipes.

The same :class:`ShellSession` green uses over the Docker exec socket runs here over the
stdin/stdout/stderr pipes of a local ``/bin/sh`` (tests/support/pipe_transport.py): framing,
exit codes, stderr, timeouts, output caps and session loss owe nothing to Docker.
"""

from __future__ import annotations

import os
import shutil
import time

import pytest

from services.sandbox.framing import SessionLost, ShellSession
from tests.support.pipe_transport import PipeTransport

pytestmark = pytest.mark.skipif(shutil.which("setsid") is None, reason="needs setsid")


@pytest.fixture
async def session(tmp_path):
    transport = PipeTransport()
    s = ShellSession(transport, str(tmp_path))
    await s.open()
    yield s
    s.close()
    await transport.aclose()


async def test_commands_exit_codes_and_interleaved_stderr(session: ShellSession, tmp_path) -> None:
    assert session.shell in ("bash", "sh") and session.driver_pid.isdigit()
    result = await session.run("pwd; echo out; echo err >&2; exit 3", 10, 4096)
    assert result.exit_code == 3 and not result.timed_out
    assert result.output == f"{tmp_path}\nout\nerr\n"
    tricky = "printf '%s\\n' \"a'b\" 'c\\d'\ncat <<'EOF'\n$HOME `x`\nEOF"
    assert (await session.run(tricky, 10, 4096)).output == "a'b\nc\\d\n$HOME `x`\n"


async def test_timeout_kills_the_command_and_the_session_lives_on(session: ShellSession) -> None:
    started = time.monotonic()
    result = await session.run("echo begun; sleep 100 & sleep 100", 1.0, 4096)
    assert result.timed_out and result.exit_code == -1 and result.output == "begun\n"
    assert time.monotonic() - started < 8
    assert (await session.run("echo next", 10, 4096)).output == "next\n"


async def test_output_is_capped_head_and_tail(session: ShellSession) -> None:
    result = await session.run("head -c 100000 /dev/zero | tr '\\0' x; echo; echo END", 10, 1000)
    assert result.truncated and result.bytes_cut > 90_000
    assert result.output.startswith("x" * 500) and result.output.endswith("END\n")


async def test_a_command_killing_its_driver_ends_the_session(session: ShellSession) -> None:
    result = await session.run("echo dying; kill -9 $PPID; sleep 100", 10, 4096)
    assert result.exit_code == -1 and "session ended" in result.output
    assert not session.alive
    with pytest.raises(SessionLost):  # the next command goes to a new session
        await session.run("echo x", 10, 4096)
    transport = PipeTransport()
    fresh = ShellSession(transport, os.getcwd())
    await fresh.open()
    try:
        assert (await fresh.run("echo back", 10, 4096)).output == "back\n"
    finally:
        fresh.close()
        await transport.aclose()
