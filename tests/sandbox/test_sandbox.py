"""DockerSandbox against a real engine: isolation, limits, timeouts, output cap, files, cleanup.

Needs a Docker engine and the locally built ``arena/arvo-base:bookworm`` image (override with
``ARENA_TEST_IMAGE``); skipped otherwise. Every container carries a label prefix unique to
this run, so ``reap()`` here never touches containers of other runs or of a live green.
"""

from __future__ import annotations

import errno
import gc
import hashlib
import io
import os
import resource
import secrets
import tarfile
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import docker
import docker.errors
import pytest

from services.sandbox import framing
from services.sandbox.base import (
    EngineUnreachable,
    ImageNotFound,
    Sandbox,
    SandboxError,
    SandboxProvider,
    SandboxSpec,
    UnreadableFile,
)
from services.sandbox.blocking import BlockingProvider
from services.sandbox.blocking import BlockingSandbox as DockerSandbox
from services.sandbox.docker import KEEPER, DockerSandboxProvider
from services.sandbox.docker.transport import DockerExecTransport, run_setup
from services.sandbox.framing import ShellSession

pytestmark = pytest.mark.docker

IMAGE = os.environ.get("ARENA_TEST_IMAGE", "arena/arvo-base:bookworm")
PREFIX = f"arenatest{secrets.token_hex(3)}"


@pytest.fixture(scope="module")
def client() -> Iterator[docker.DockerClient]:
    try:
        client = docker.from_env()
        client.ping()
        client.images.get(IMAGE)
    except docker.errors.ImageNotFound:
        pytest.skip(f"test image {IMAGE} is not built")
    except Exception as e:
        pytest.skip(f"no Docker engine: {e}")
    yield client
    blocking(client, PREFIX).reap()  # whatever a failed test left
    client.close()


def blocking(client: docker.DockerClient, prefix: str) -> BlockingProvider:
    """The async provider behind a blocking facade (an event loop in a thread)."""
    return BlockingProvider(DockerSandboxProvider(client, label_prefix=prefix))


@pytest.fixture(scope="module")
def provider(client: docker.DockerClient) -> Iterator[BlockingProvider]:
    provider = blocking(client, PREFIX)
    yield provider
    provider.close()


def _spec(**overrides: object) -> SandboxSpec:
    fields: dict = {"image": IMAGE, "task_id": secrets.token_hex(8), "ref_id": "4242"}
    fields["writable"] = ("/workspace",)  # the agent's, as a task's workspace is
    fields["memory"], fields["cpus"], fields["pids_limit"] = "512m", 1.0, 256
    return SandboxSpec(**{**fields, **overrides})


@pytest.fixture
def make(provider: BlockingProvider) -> Iterator[Callable[..., DockerSandbox]]:
    """Create sandboxes that are removed when the test ends, whatever happens."""
    made: list[DockerSandbox] = []

    def make(**overrides: object) -> DockerSandbox:
        sandbox = provider.create(_spec(**overrides))
        made.append(sandbox)
        return sandbox

    yield make
    for sandbox in made:
        sandbox.remove()


@pytest.fixture(scope="module")
def shared(provider: BlockingProvider) -> Iterator[DockerSandbox]:
    """One sandbox for the tests that leave it as they found it."""
    sandbox = provider.create(_spec())
    yield sandbox
    sandbox.remove()


def _processes(sandbox: DockerSandbox, reaped_within: float = 10.0) -> list[str]:
    """Command lines of the container's processes, minus the keeper (pid 1 and its sleep), the
    session and the bash it started ahead for the next command. A killed process shows as
    ``[name]`` while it exits and ``<defunct>`` until pid 1 reaps it (a moment; longer on a
    loaded machine; the keeper's ``sleep``, killed after every command, too): while every one
    left is such, they are given ``reaped_within`` seconds to go. A live one is returned at
    once."""
    deadline = time.monotonic() + reaped_within
    idle = (
        "/bin/sh -c trap '' ",
        "sleep 2147483647",
        "/bin/sh -c read -r k",
        "bash -c d=$_arena",
        'bash -c IFS= read -r -d "" _arena_cmd',
        '/usr/bin/bash -c IFS= read -r -d "" _arena_cmd',  # as the agent: setpriv's exec of it
    )
    while True:
        out = sandbox.exec("ps -eo args=", timeout=10).output.splitlines()
        left = [line for line in out if not line.startswith(idle) and "ps -eo args=" not in line]
        # an exiting process shows with an empty command line, as [name]; a zombie <defunct>
        if not left or not all(p.endswith("<defunct>") or p.startswith("[") for p in left):
            return left
        if time.monotonic() > deadline:
            return left
        time.sleep(0.1)


# -- commands ---------------------------------------------------------------------------------


def test_exit_codes_workdir_and_interleaved_stderr(shared: DockerSandbox) -> None:
    assert isinstance(shared, Sandbox)
    ok = shared.exec("echo hi", timeout=10)
    assert (ok.exit_code, ok.output, ok.timed_out, ok.truncated) == (0, "hi\n", False, False)
    assert ok.duration_s < 5
    assert shared.exec("exit 3", timeout=10).exit_code == 3
    missing = shared.exec("no-such-command-xyz", timeout=10)
    assert missing.exit_code == 127 and "not found" in missing.output
    assert shared.exec("false; true", timeout=10).exit_code == 0
    assert shared.exec("set -o pipefail; false | true", timeout=10).exit_code == 1  # bash
    assert shared.exec("cd /tmp; pwd", timeout=10).output == "/tmp\n"
    assert shared.exec("pwd", timeout=10).output == "/workspace\n"  # each command starts afresh
    mixed = shared.exec("echo 1; echo 2 >&2; echo 3", timeout=10)
    assert mixed.output == "1\n2\n3\n"
    assert shared.exec("kill -TERM $$", timeout=10).exit_code == 128 + 15


def test_quotes_newlines_heredocs_survive_framing(shared: DockerSandbox) -> None:
    command = (
        "printf '%s|' \"double\" 'single' \\$HOME `echo back` $'\\t'\n"
        "cat <<'EOF'\n"
        "  literal $HOME \\n 'q' \"qq\" \\\n"
        "EOF\n"
        "cat <<EOF\n"
        "expanded ${PWD}\n"
        "EOF\n"
        "echo 'multi\n"
        "line'; echo héllo ✓\r"
    )
    result = shared.exec(command, timeout=10)
    assert result.exit_code == 0, result.output
    assert result.output == (
        "double|single|$HOME|back|\t|"
        "  literal $HOME \\n 'q' \"qq\" \\\n"
        "expanded /workspace\n"
        "multi\nline\n"
        "héllo ✓\r\n"
    )
    # a line that looks like framing is just output
    assert shared.exec("echo 0 1; echo deadbeef 0", timeout=10).output == "0 1\ndeadbeef 0\n"


def test_large_command(shared: DockerSandbox) -> None:
    body = "".join(f"line {i} 'quoted' \"dq\" $x \\\n" for i in range(3000))  # ~110 KB
    result = shared.exec(f"cat > /tmp/big <<'EOF'\n{body}EOF\nwc -c < /tmp/big", timeout=60)
    assert result.exit_code == 0 and int(result.output) == len(body.encode())
    assert shared.read_file("/tmp/big") == body.encode()
    shared.exec("rm /tmp/big", timeout=10)
    # like `docker exec ... bash -c`, a command is one argv string, at most 128 KiB (Linux)
    huge = shared.exec("true " + "x" * 140_000, timeout=60)
    assert huge.exit_code == 126 and "Argument list too long" in huge.output
    assert shared.exec("echo fine", timeout=10).output == "fine\n"


def test_non_utf8_output_is_replaced(shared: DockerSandbox) -> None:
    result = shared.exec(r"printf 'a\377\376b\303\n'", timeout=10)
    assert result.exit_code == 0
    assert result.output == "a\ufffd\ufffdb\ufffd\n"


def test_background_leftovers_are_killed_after_each_command(shared: DockerSandbox) -> None:
    started = time.monotonic()
    command = "sleep 1000 & (sleep 0.5; echo late) & setsid sleep 1001 & echo started"
    result = shared.exec(command, timeout=10)
    assert result.output == "started\n" and result.exit_code == 0
    assert time.monotonic() - started < 5
    time.sleep(0.8)
    assert "late" not in shared.exec("echo next", timeout=10).output
    assert _processes(shared) == []


def test_the_next_command_starts_once_what_the_last_left_has_exited(shared: DockerSandbox) -> None:
    """A process killed as its command ends may take a while to exit (freeing 300 MB, say): the
    driver waits for it (``settle``) before the next command, which never sees it still alive
    (as ``[python3]``, exiting); a zombie not yet reaped by pid 1 may show, it holds nothing."""
    hog = "python3 -c 'b = bytearray(300 * 2**20); import time; time.sleep(100)' & sleep 1; echo up"
    for _ in range(3):
        assert shared.exec(hog, timeout=20).output == "up\n"
        seen = shared.exec("ps -eo stat=,args= | grep python3 | grep -v grep", timeout=10)
        assert all(line.startswith("Z") for line in seen.output.splitlines()), seen.output


GROUP_AND_SESSION = "echo $$ $(cut -d' ' -f5,6 /proc/$$/stat)"
"""Prints the command shell's pid, process group and session."""


def test_each_command_is_a_group_of_its_own_that_cannot_reach_the_session(
    shared: DockerSandbox,
) -> None:
    shared.exec("true", timeout=10)
    assert shared._session is not None and shared._session.shell == "bash"
    driver = shared._session.driver_pid
    pid, group, session = shared.exec(GROUP_AND_SESSION, timeout=10).output.split()
    assert group == pid  # its own process group: a timeout kills it as one
    assert session == driver  # a job of the bash driver (set -m), no setsid exec per command
    killed = shared.exec("kill 0; echo survived", timeout=10)
    assert killed.exit_code == 128 + 15 and "survived" not in killed.output
    assert shared.exec("echo next", timeout=10).output == "next\n"
    assert shared._session.driver_pid == driver  # kill 0 did not reach the session's shell


def test_a_short_command_runs_in_the_bash_started_ahead_a_long_one_in_a_new_one(
    shared: DockerSandbox,
) -> None:
    """Both see what ``bash -c`` gives a command: stdin at EOF, the working directory, no
    arguments, a process group of their own. Which bash ran it shows in
    ``$BASH_EXECUTION_STRING``: the script that waits for the text, or the command itself."""
    which = 'case $BASH_EXECUTION_STRING in "IFS= read"*) echo ahead;; *) echo new;; esac'
    probe = f'{which}; cat; echo "$(pwd) $# $(cut -d" " -f5 /proc/$$/stat) $$"'
    long = probe + "  # " + "x" * 5000
    for command, bash in [(probe, "ahead"), (probe, "ahead"), (long, "new"), (probe, "ahead")]:
        result = shared.exec(command, timeout=10)
        ran, seen = result.output.splitlines()
        workdir, args, group, pid = seen.split()
        assert (result.exit_code, ran, workdir, args, group) == (0, bash, "/workspace", "0", pid)


# -- timeouts ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "echo before; sleep 1000 & sleep 1000",
        "(sleep 1001; echo) | (sleep 1002 | cat) & bash -c 'sleep 1003 & wait' & echo before; wait",
        "echo before; while :; do :; done",
        "trap '' TERM INT HUP; echo before; sleep 1004",
        "setsid sleep 1005 & (setsid bash -c 'sleep 1006 & wait' &); nohup sleep 1007 >/dev/null &"
        " echo before; sleep 1000",
    ],
    ids=["background", "subshells-pipelines", "busy-loop", "ignores-term", "escapes-session"],
)
def test_timeout_kills_every_process_of_the_command(shared: DockerSandbox, command: str) -> None:
    started = time.monotonic()
    result = shared.exec(command, timeout=1.0)
    assert result.timed_out and result.exit_code == -1
    assert result.output == "before\n"  # output so far is kept
    assert 1.0 <= result.duration_s < 6 and time.monotonic() - started < 8
    assert _processes(shared) == []
    assert shared.exec("echo alive", timeout=10).output == "alive\n"  # session reused


def test_a_timeout_kills_the_command_group_in_one_pass(shared: DockerSandbox) -> None:
    """A process of the command that watches its shell (busy, on a core of its own) never sees
    it die: the killer ends the group in one pass (``kill -KILL -<group>``). A sweep process by
    process lets it print, as a shell killed after its child says ``Killed``."""
    watch = (  # a child of the command's shell, busy until that shell is gone (pid 1 adopts it)
        "(while read -r l </proc/$BASHPID/stat; set -- ${l##*') '}; [ $2 != 1 ]; do :; done;"
        " echo SAW ITS SHELL DIE) & sleep 0.2; echo before; sleep 1000"
    )
    for _ in range(3):
        result = shared.exec(watch, timeout=1.0)
        assert (result.timed_out, result.output) == (True, "before\n"), result.output


# -- output cap and green's memory ------------------------------------------------------------


def test_output_cap_keeps_head_and_tail_and_memory_bounded(shared: DockerSandbox) -> None:
    total = 200_000_000
    shared.exec("true", timeout=10)  # session open before measuring
    gc.collect()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    tracemalloc.start()
    try:
        result = shared.exec(
            f"echo HEAD; yes 0123456789 | head -c {total}; echo; echo TAIL", timeout=120
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    rss_growth = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - rss_before
    limit = shared.spec.output_limit
    emitted = len("HEAD\n") + total + len("\nTAIL\n")
    assert result.exit_code == 0 and result.truncated
    assert result.bytes_cut == emitted - limit
    assert result.output.startswith("HEAD\n0123456789\n") and result.output.endswith("\nTAIL\n")
    assert f"\n[... {emitted - limit:,} bytes cut ...]\n" in result.output
    assert len(result.output.encode()) < limit + 100
    assert peak < 30 * 2**20, f"python heap peaked at {peak / 2**20:.1f} MiB"
    assert rss_growth < 30 * 2**20, f"RSS grew by {rss_growth / 2**20:.1f} MiB"


def test_small_output_limit(make: Callable[..., DockerSandbox]) -> None:
    sandbox = make(output_limit=10)
    result = sandbox.exec("printf 0123456789abcdefghij", timeout=10)
    assert (result.truncated, result.bytes_cut) == (True, 10)
    assert result.output == "01234\n[... 10 bytes cut ...]\nfghij"
    assert not sandbox.exec("printf 0123456789", timeout=10).truncated


# -- container configuration ------------------------------------------------------------------


def test_container_is_named_labelled_and_locked_down(
    client: docker.DockerClient, make: Callable[..., DockerSandbox]
) -> None:
    sandbox = make(labels={"extra": "x"}, memory="256m", cpus=0.5, pids_limit=64)
    attrs = client.containers.get(sandbox.name).attrs
    assert sandbox.name.startswith("arena-task-") and len(sandbox.name) == len("arena-task-") + 8
    assert sandbox.engine == "local"
    labels = attrs["Config"]["Labels"]
    assert labels[f"{PREFIX}.managed"] == "1" and labels["extra"] == "x"
    assert labels[f"{PREFIX}.task_id"] == sandbox.spec.task_id
    assert labels[f"{PREFIX}.ref_id"] == "4242"
    host = attrs["HostConfig"]
    assert host["Memory"] == 256 * 2**20
    assert host["NanoCpus"] == 500_000_000
    assert host["PidsLimit"] == 64
    assert host["NetworkMode"] == "none"
    assert host["Privileged"] is False
    assert host["SecurityOpt"] == ["no-new-privileges"]
    assert {"NET_RAW", "SYS_ADMIN"} <= set(host["CapDrop"])
    assert not host["Init"]  # the keeper is pid 1 itself (Docker's init dies with its child)
    assert not host.get("Binds") and not attrs["Mounts"]  # no socket, no host path
    assert attrs["Config"]["Entrypoint"] == ["/bin/sh", "-c"]
    assert attrs["Config"]["Cmd"] == [KEEPER]


def test_no_network_inside(shared: DockerSandbox) -> None:
    assert shared.exec("ls /sys/class/net", timeout=10).output.split() == ["lo"]
    probe = (
        "python3 -c 'import socket; s = socket.socket(); s.settimeout(3); "
        's.connect(("1.1.1.1", 53)); print("connected")\''
    )
    result = shared.exec(probe, timeout=15)
    assert result.exit_code != 0 and "connected" not in result.output
    assert "unreachable" in result.output.lower()


def test_pids_limit_stops_a_fork_loop(make: Callable[..., DockerSandbox]) -> None:
    sandbox = make(pids_limit=48)
    fork_loop = (
        "python3 - <<'EOF'\n"
        "import os, time\n"
        "n = 0\n"
        "try:\n"
        "    while n < 1000:\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(60); os._exit(0)\n"
        "        n += 1\n"
        "except OSError as e:\n"
        "    print('stopped after', n, 'forks:', e.strerror)\n"
        "EOF"
    )
    result = sandbox.exec(fork_loop, timeout=30)
    assert "stopped after" in result.output, result.output
    assert int(result.output.split()[2]) < 48
    assert _processes(sandbox) == []  # the sleeping children went with the command


def test_memory_limit_kills_a_hog(make: Callable[..., DockerSandbox]) -> None:
    sandbox = make(memory="128m")
    hog = "python3 -c 'b = bytearray(400 * 2**20); print(\"survived\")'"
    result = sandbox.exec(hog, timeout=30)
    # (bash may report the kill, quoting the command: only the program's own line counts)
    assert result.exit_code in (137, 1) and "survived" not in result.output.splitlines()
    assert sandbox.exec("echo alive", timeout=10).output == "alive\n"


def test_containers_are_isolated(make: Callable[..., DockerSandbox]) -> None:
    a, b = make(), make()
    assert a.name != b.name
    a.put_files("/workspace", {"b.txt": b"only in a"})
    a.exec("echo secret > /workspace/a.txt; sleep 300 >/dev/null &", timeout=10)
    assert b.exec("ls /workspace", timeout=10).output == ""
    assert b.exec("cat /workspace/a.txt", timeout=10).exit_code == 1
    with pytest.raises(FileNotFoundError):
        b.read_file("/workspace/b.txt")
    assert a.read_file("/workspace/a.txt") == b"secret\n"


def test_image_not_found(provider: BlockingProvider) -> None:
    with pytest.raises(ImageNotFound, match="does-not-exist"):
        provider.create(_spec(image="arena/does-not-exist:nope"))


def test_ping(provider: BlockingProvider) -> None:
    assert isinstance(provider.provider, SandboxProvider)
    assert provider.ping() is True
    unreachable = docker.DockerClient("tcp://127.0.0.1:9", version="1.41", timeout=2)
    gone = BlockingProvider(DockerSandboxProvider(unreachable))
    assert gone.ping() is False
    with pytest.raises(EngineUnreachable) as caught:  # a standard ConnectionError too
        gone.create(_spec())
    assert isinstance(caught.value, ConnectionError) and isinstance(caught.value, SandboxError)
    assert gone.run(gone.provider.engines)[0]["up"] is False


# -- files ------------------------------------------------------------------------------------


def test_put_archive_put_files_read_file(make: Callable[..., DockerSandbox]) -> None:
    """Files go in before the agent's first command (after it, root writing where the agent
    may have put a link is refused) and come out as regular files only."""
    shared = make()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in {"proj/src/a.c": b"int main(){}\n", "proj/README": b"hi\n"}.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    shared.put_archive("/workspace/src-vul", buf.getvalue())
    buf.seek(0)  # an open file is streamed to the engine, the same result
    shared.put_archive("/workspace/streamed", buf)
    binary = bytes(range(256)) * 100
    shared.put_files("/workspace/shared", {"loc.json": b"{}", "deep/er/blob.bin": binary})
    shared.put_files("/tmp", {"x": b"1"})  # an existing directory keeps its mode
    with pytest.raises(ValueError):
        shared.put_files("/workspace", {"../escape": b""})
    listing = shared.exec("cd src-vul && find . -type f | sort", timeout=10).output
    assert listing == "./proj/README\n./proj/src/a.c\n"
    listing = shared.exec("cd streamed && find . -type f | sort", timeout=10).output
    assert listing == "./proj/README\n./proj/src/a.c\n"
    assert shared.read_file("/workspace/src-vul/proj/src/a.c") == b"int main(){}\n"
    assert shared.read_file("/workspace/shared/deep/er/blob.bin") == binary
    assert shared.read_file("/workspace/shared/loc.json") == b"{}"
    assert shared.exec("stat -c %a /tmp", timeout=10).output == "1777\n"
    with pytest.raises(SandboxError, match="only before the agent"):
        shared.put_files("/workspace", {"late": b""})

    shared.exec("ln -sf /workspace/shared/loc.json /workspace/link", timeout=10)
    with pytest.raises(UnreadableFile, match="symbolic link"):  # never followed
        shared.read_file("/workspace/link")
    with pytest.raises(FileNotFoundError):
        shared.read_file("/workspace/shared/missing.json")
    with pytest.raises(UnreadableFile, match="directory") as caught:  # not infra: an OSError
        shared.read_file("/workspace/shared")
    assert caught.value.errno == errno.EISDIR and not isinstance(caught.value, SandboxError)
    with pytest.raises(UnreadableFile, match="bytes") as caught:
        shared.read_file("/workspace/shared/deep/er/blob.bin", max_bytes=1000)
    assert caught.value.errno == errno.EFBIG


def test_a_file_larger_than_the_sockets_buffers_is_read_and_the_container_stays_free(
    make: Callable[..., DockerSandbox],
) -> None:
    """The engine holds a container's lock while it streams an archive. A build's 8 MiB /out
    read with the stream still open (its parents checked meanwhile) waited on that lock until
    the client timed out, and a file refused as too large left the container locked for every
    later exec and removal (a judging container hung, then the task)."""
    sandbox = make()
    made = sandbox.exec(
        "head -c 8388608 /dev/urandom > /tmp/eight && sha256sum < /tmp/eight | cut -c1-64",
        timeout=60,
    )
    assert made.exit_code == 0, made.output
    data = sandbox.read_file("/tmp/eight", max_bytes=16 << 20)
    assert hashlib.sha256(data).hexdigest() == made.output.strip()
    with pytest.raises(UnreadableFile, match="more than") as caught:
        sandbox.read_file("/tmp/eight", max_bytes=1 << 20)
    assert caught.value.errno == errno.EFBIG
    assert sandbox.exec("echo free", timeout=30).output == "free\n"


# -- failures and cleanup ---------------------------------------------------------------------


def test_session_recovers_after_the_shell_is_killed(
    client: docker.DockerClient, make: Callable[..., DockerSandbox]
) -> None:
    """Where the commands run as root (green's own containers; an agent's cannot signal its
    driver: ``test_sandbox_hostile.py``)."""
    sandbox = make(agent_uid=None)
    result = sandbox.exec("echo dying; kill -9 $PPID; sleep 1000", timeout=20)
    assert result.exit_code == -1 and not result.timed_out
    assert result.output.startswith("dying\n") and "session ended" in result.output
    assert sandbox.exec("echo back", timeout=10).output == "back\n"
    assert _processes(sandbox) == []  # the orphaned sleep was killed too

    # killed from outside between two commands: reopened without losing the next command
    session = sandbox._session
    assert session is not None
    container = client.containers.get(sandbox.name)
    container.exec_run(["kill", "-9", session.driver_pid])
    gone = f"test ! -e /proc/{session.driver_pid} || grep -q ') Z' /proc/{session.driver_pid}/stat"
    deadline = time.monotonic() + 30  # until the driver is dead (gone, or a zombie)
    while container.exec_run(["sh", "-c", gone]).exit_code != 0:
        assert time.monotonic() < deadline, "the driver outlived kill -9"
        time.sleep(0.05)
    assert sandbox.exec("echo again", timeout=10).output == "again\n"


def test_session_is_replaced_when_the_driver_hangs(
    make: Callable[..., DockerSandbox], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A driver that never reports back after the kill (here: stopped by its command) is
    abandoned after DRAIN_TIMEOUT; the next command gets a new session."""
    monkeypatch.setattr("services.sandbox.framing.DRAIN_TIMEOUT", 1.0)
    sandbox = make(agent_uid=None)  # as root: an agent's command cannot stop its driver
    result = sandbox.exec("echo frozen; kill -STOP $PPID; sleep 1000", timeout=1.0)
    assert result.timed_out and result.exit_code == -1 and result.output == "frozen\n"
    assert result.duration_s < 6
    assert sandbox.exec("echo fresh", timeout=10).output == "fresh\n"
    assert _processes(sandbox) == []


def test_in_greens_own_container_the_result_comes_after_the_cleanup_that_would_end_greens_next_exec(
    client: docker.DockerClient, make: Callable[..., DockerSandbox], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without an agent uid (green's own containers: builds, judging) the cleanup after a
    command is ``kill -KILL -1`` as root: every process but pid 1 and the driver. Here the
    driver is held up for a second before its cleanup, as a loaded machine can hold it, and
    green runs an exec of its own as soon as it has the command's result. Before, the result
    came first and the cleanup then killed that exec (CI lost a judge's ``mkdir /out`` so, and
    many disk scans: exit 137, no output)."""
    held = framing.DRIVER.replace('clean "$p"', 'sleep 1; clean "$p"')
    assert held != framing.DRIVER
    monkeypatch.setattr(framing, "DRIVER", held)
    sandbox = make(agent_uid=None)
    assert sandbox.exec("sleep 600 & echo left", timeout=20).output == "left\n"
    code, out = run_setup(client.api, sandbox.name, ["/bin/sh", "-c", "sleep 2; echo ok"], 20)
    assert (code, out) == (0, b"ok\n")
    assert _processes(sandbox) == []  # what the command left was gone before its result


def test_lost_container_raises_sandbox_error(
    client: docker.DockerClient, make: Callable[..., DockerSandbox]
) -> None:
    sandbox = make()
    sandbox.put_files("/workspace/shared", {"loc.json": b"{}"})
    assert sandbox.exec("echo up", timeout=10).exit_code == 0
    client.containers.get(sandbox.name).kill()
    with pytest.raises(SandboxError, match="not running"):
        sandbox.exec("echo up", timeout=10)
    assert sandbox.read_file("/workspace/shared/loc.json") == b"{}"  # still readable
    client.containers.get(sandbox.name).remove(force=True)
    with pytest.raises(SandboxError, match="No such container"):
        sandbox.read_file("/workspace/shared/loc.json")
    with pytest.raises(SandboxError):
        sandbox.exec("echo up", timeout=10)


def test_remove_is_idempotent_and_interrupts_a_running_command(
    client: docker.DockerClient, provider: BlockingProvider
) -> None:
    sandbox = provider.create(_spec())
    errors: list[BaseException] = []

    def run() -> None:
        try:
            sandbox.exec("sleep 1000", timeout=60)
        except BaseException as e:
            errors.append(e)

    worker = threading.Thread(target=run)
    worker.start()
    time.sleep(0.5)
    started = time.monotonic()
    sandbox.remove()
    sandbox.remove()
    worker.join(15)
    assert not worker.is_alive() and time.monotonic() - started < 15
    assert len(errors) == 1 and isinstance(errors[0], SandboxError)
    with pytest.raises(docker.errors.NotFound):
        client.containers.get(sandbox.name)
    with pytest.raises(SandboxError):
        sandbox.exec("true", timeout=5)


def test_reap_removes_labelled_leftovers(client: docker.DockerClient) -> None:
    prefix = f"{PREFIX}r"
    first = blocking(client, prefix)
    names = {first.create(_spec()).name for _ in range(2)}
    client.containers.get(sorted(names)[0]).stop(timeout=0)  # running or not
    first.close()
    del first
    gc.collect()
    assert set(blocking(client, prefix).reap()) == names
    for name in names:
        with pytest.raises(docker.errors.NotFound):
            client.containers.get(name)
    assert blocking(client, prefix).reap() == []


def test_falls_back_to_sh_without_bash(
    client: docker.DockerClient, provider: BlockingProvider
) -> None:
    builder = client.containers.run(IMAGE, ["sleep", "60"], detach=True, network_mode="none")
    tag = f"arena/test-nobash:{secrets.token_hex(4)}"
    try:
        builder.exec_run(["rm", "-f", "/usr/bin/bash", "/bin/bash"])
        builder.commit(*tag.split(":"))
    finally:
        builder.remove(force=True)
    try:
        sandbox = provider.create(_spec(image=tag))
        try:
            result = sandbox.exec("echo $0; cat <<EOF\nok\nEOF", timeout=10)
            assert result.output == "sh\nok\n"
            assert sandbox._session is not None and sandbox._session.shell == "sh"
            pid, group, session = sandbox.exec(GROUP_AND_SESSION, timeout=10).output.split()
            assert group == pid and session == pid  # without bash: a session of its own (setsid)
            timed = sandbox.exec("sleep 1000 & sleep 1000", timeout=1)
            assert timed.timed_out and _processes(sandbox) == []
        finally:
            sandbox.remove()
    finally:
        client.images.remove(tag, force=True)


# -- concurrency ------------------------------------------------------------------------------


def test_sandboxes_run_in_parallel_and_each_serializes(make: Callable[..., DockerSandbox]) -> None:
    a, b = make(), make()
    for sandbox in (a, b):
        sandbox.exec("true", timeout=10)  # sessions open before timing
    results: dict[str, list[str]] = {"a": [], "b": []}

    def work(key: str, sandbox: DockerSandbox) -> None:
        for i in range(3):
            results[key].append(sandbox.exec(f"sleep 0.5; echo {key}{i}", timeout=10).output)

    started = time.monotonic()
    threads = [threading.Thread(target=work, args=item) for item in (("a", a), ("b", b))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    elapsed = time.monotonic() - started
    assert results == {"a": ["a0\n", "a1\n", "a2\n"], "b": ["b0\n", "b1\n", "b2\n"]}
    assert elapsed < 2.8, f"not parallel: {elapsed:.2f}s"  # 3 s if serialized

    # many threads on one sandbox: serialized, every reply matches its command
    replies: list[tuple[int, str]] = []

    def hammer(n: int) -> None:
        for i in range(10):
            replies.append((n * 100 + i, a.exec(f"echo {n * 100 + i}", timeout=10).output))

    threads = [threading.Thread(target=hammer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(replies) == 40 and all(out == f"{n}\n" for n, out in replies)


# -- transports -------------------------------------------------------------------------------


async def test_thread_pool_stream_works_like_the_event_loop_stream(
    client: docker.DockerClient,
) -> None:
    """A socket the event loop cannot drive (TLS, ssh) is read in the provider's threads: the
    same session over either way of reading the exec socket."""
    provider = DockerSandboxProvider(client, label_prefix=PREFIX)
    sandbox = await provider.create(_spec())
    pool = ThreadPoolExecutor(4)
    try:
        for threaded in (False, True):
            transport = DockerExecTransport(client.api, sandbox.id, pool, threaded=threaded)
            session = ShellSession(transport, "/workspace")
            await session.open()
            assert session._stream is not None and session._stream.threaded is threaded
            result = await session.run("echo out; echo err >&2; exit 4", 10, 4096)
            assert (result.exit_code, result.output) == (4, "out\nerr\n")
            timed = await session.run("echo a; sleep 100", 1, 4096)
            assert timed.timed_out and timed.output == "a\n"
            assert (await session.run("echo b", 10, 4096)).output == "b\n"
            session.close()
    finally:
        await sandbox.remove()
        await provider.aclose()
        pool.shutdown()


def test_read_tree_is_the_engines_tar_bounded_and_never_follows_a_link(
    make: Callable[..., DockerSandbox],
) -> None:
    """A directory comes out as the engine's tar (links inside archived as links); a link to
    a directory, a file or a tar past the bound is refused as UnreadableFile (the agent's)."""
    box = make()
    box.put_files("/workspace/tree", {"a.c": b"int a;\n", "sub/b.h": b"#define B\n"})
    box.exec("ln -s /etc/passwd /workspace/tree/evil && ln -s /etc /workspace/etc", timeout=10)
    out = io.BytesIO()
    box.read_tree("/workspace/tree", out, 1 << 20)
    out.seek(0)
    with tarfile.open(fileobj=out) as tar:
        members = {m.name: m for m in tar.getmembers()}
        assert tar.extractfile(members["tree/a.c"]).read() == b"int a;\n"  # type: ignore[union-attr]
    assert members["tree/evil"].issym() and members["tree/evil"].linkname == "/etc/passwd"
    assert "tree/sub/b.h" in members
    with pytest.raises(UnreadableFile, match="symbolic link"):
        box.read_tree("/workspace/etc", io.BytesIO(), 1 << 20)
    with pytest.raises(UnreadableFile, match="not a directory"):
        box.read_tree("/workspace/tree/a.c", io.BytesIO(), 1 << 20)
    with pytest.raises(UnreadableFile, match="more than") as caught:
        box.read_tree("/workspace/tree", io.BytesIO(), 100)
    assert caught.value.errno == errno.EFBIG
    with pytest.raises(FileNotFoundError):
        box.read_tree("/workspace/missing", io.BytesIO(), 1 << 20)
