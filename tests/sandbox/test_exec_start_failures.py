"""services/sandbox/docker/transport.py: a root exec whose process the runtime failed to start
is started again (nothing of it ran); any other answer is the process's own."""

from __future__ import annotations

from services.sandbox.docker.transport import never_started

# what the engine answered in CI while a judging container's `mkdir -p /out` was started under load
LOST_INIT = (
    b"OCI runtime exec failed: exec failed: unable to start container process: "
    b"read init-p: connection reset by peer: unknown\r\n"
)


def test_the_runtime_losing_its_init_is_a_process_that_never_started() -> None:
    assert never_started(126, LOST_INIT)
    assert never_started(1, LOST_INIT)


def test_the_process_own_answers_are_not_retried() -> None:
    assert not never_started(0, LOST_INIT)  # it ran, and printed that text
    assert not never_started(None, LOST_INIT)  # the engine could not say how it ended
    assert not never_started(1, b"mkdir: cannot create directory '/out': Permission denied\n")
    assert not never_started(126, b"sh: 1: x: Permission denied\n" + LOST_INIT)  # not its start
