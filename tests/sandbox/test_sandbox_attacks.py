"""Issue #39's attacks 1-6 and #40's blind scan, as the agent makes them: through its commands
(``exec``) and what green then reads, on the default engine (overlay2, a *watched* disk cap)
and, for attacks 1-5, on an engine whose btrfs quota *enforces* the cap
(tests/support/second_dockerd ``btrfs_dockerd``; skipped where the machine has no btrfs, failed
under ``ARENA_STRICT=1``).

Before the agent's commands ran as a uid of their own, every one of these worked: the agent was
root in its container, beside green's driver, kill and scans (``docs/security.md``, "Threat
model", has each attack, its defence and its test). Figures are printed (``pytest -s``).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import time
from collections.abc import Callable, Iterator

import docker
import docker.errors
import pytest

from services.sandbox.base import AgentFault, SandboxError, SandboxSpec, UnreadableFile
from services.sandbox.blocking import BlockingProvider
from services.sandbox.blocking import BlockingSandbox as DockerSandbox
from services.sandbox.docker import DockerSandboxProvider
from services.sandbox.docker.disk import MeasurementFailed, hidden_bytes
from tests.support.sandboxes import sandbox_maker
from tests.support.second_dockerd import btrfs_dockerd  # noqa: F401

pytestmark = pytest.mark.docker

IMAGE = os.environ.get("ARENA_QUOTA_IMAGE", "arena/python-base:3.11-bookworm")
PREFIX = f"arenaattack{secrets.token_hex(3)}"
MiB = 2**20
ENGINES = ["default", "btrfs"]

STOPPER = r"""
import os, signal, sys, time

# For argv[1] seconds: SIGSTOP every process that is not the agent's own (runc init,
# arena-kill, the session's driver, green's disk scans: when they ran as root beside the agent,
# that jammed the engine); say which it managed to stop.
me, tried = os.getuid(), set()
end = time.time() + float(sys.argv[1])
while time.time() < end:
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) in tried or int(pid) in (1, os.getpid()):
            continue
        try:
            if os.stat(f"/proc/{pid}").st_uid == me and me != 0:
                continue  # its own command (its shell, its writers)
            tried.add(int(pid))
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()[:60]
            os.kill(int(pid), signal.SIGSTOP)
            print("stopped", pid, cmd, flush=True)
        except OSError:
            pass
"""

HIDDEN_HOLDER = r"""
import ctypes, os, signal, sys, time

# Non-dumpable (its /proc/<pid>/fd is closed to anyone without CAP_SYS_PTRACE), then files
# unlinked but kept open, each under the cap (no single file may pass it), held.
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0
held, fds = 0, []
try:
    for i in range(int(sys.argv[1])):
        fds.append(os.open(f"/tmp/held{i}", os.O_CREAT | os.O_WRONLY, 0o600))
        os.unlink(f"/tmp/held{i}")
        for _ in range(64):
            held += os.write(fds[-1], b"x" * 2**20)
        os.fsync(fds[-1])
except OSError as e:
    print("stopped writing:", e.strerror, flush=True)
print("held", held >> 20, "MiB", flush=True)
time.sleep(float(sys.argv[2]))
"""


def _load(engine_url: str) -> None:
    save = subprocess.Popen(["docker", "save", IMAGE], stdout=subprocess.PIPE)
    subprocess.run(["docker", "-H", engine_url, "load", "-q"], stdin=save.stdout, check=True)
    assert save.wait() == 0


@pytest.fixture(scope="module", params=ENGINES)
def provider(request: pytest.FixtureRequest) -> Iterator[BlockingProvider]:
    try:
        main = docker.from_env()
        main.images.get(IMAGE)
    except docker.errors.ImageNotFound:
        pytest.skip(f"test image {IMAGE} is not built (scripts/setup.sh)")
    except Exception as e:
        pytest.skip(f"no Docker engine: {e}")
    if request.param == "btrfs":
        engine = request.getfixturevalue("btrfs_dockerd")
        _load(engine.url)
        client = engine.client()
    else:
        client = main
    provider = BlockingProvider(
        DockerSandboxProvider(client, label_prefix=PREFIX, name=request.param)
    )
    yield provider
    provider.reap()
    provider.close()


@pytest.fixture
def make(provider: BlockingProvider) -> Iterator[Callable[..., DockerSandbox]]:
    with sandbox_maker(provider, IMAGE, memory="512m", pids_limit=256) as make:
        yield make


def _inspect_seconds(provider: BlockingProvider, sandbox: DockerSandbox) -> float:
    """How long the engine takes to answer ``docker inspect`` of the sandbox's container."""
    started = time.monotonic()
    with contextlib.suppress(docker.errors.NotFound):
        provider.provider.client.api.inspect_container(sandbox.id)
    return time.monotonic() - started


def test_1_stopping_green_s_processes_cannot_stall_a_timeout_or_jam_the_engine(
    make: Callable[..., DockerSandbox], provider: BlockingProvider
) -> None:
    """The agent SIGSTOPs every process it can while its command times out: green's kill, the
    driver and their ``runc init`` are root's, so it stops none of them; the timeout kills the
    command within seconds, the next command runs, and the engine answers ``inspect``."""
    sandbox = make()
    sandbox.put_files("/tmp", {"stop.py": STOPPER.encode()})
    started = time.monotonic()
    result = sandbox.exec("python3 /tmp/stop.py 60 & sleep 60", timeout=3)
    took = time.monotonic() - started
    assert result.timed_out and result.exit_code == -1, result
    assert "stopped" not in result.output, result.output  # it could stop nothing of green's
    assert took < 30, took
    assert sandbox.exec("echo next", timeout=10).output == "next\n"
    inspect = _inspect_seconds(provider, sandbox)
    print(f"\n[{provider.name}] timed out after {took:.1f} s; docker inspect {inspect:.3f} s")
    assert inspect < 5


def test_2_stopping_the_disk_scan_cannot_blind_the_watch(
    make: Callable[..., DockerSandbox], provider: BlockingProvider
) -> None:
    """The agent tries to SIGSTOP green's disk scan while it writes 2 GiB in files under the
    cap (each file under it: no single file may pass it): the task ends ``disk_limit`` near the
    cap (before: 2,013 MB under a 128 MiB cap, 15.7 times it)."""
    cap = 128 * MiB
    sandbox = make(disk_limit=cap, disk_check_s=0.5)
    sandbox.put_files("/tmp", {"stop.py": STOPPER.encode()})
    write = "for i in $(seq 32); do head -c 64M /dev/zero > /workspace/f$i; done; sleep 5"
    with pytest.raises(AgentFault) as caught:
        sandbox.exec(f"python3 /tmp/stop.py 120 & sleep 0.5; {write}", timeout=120)
    assert caught.value.reason == "disk_limit", caught.value
    print(f"\n[{provider.name}] {caught.value}")
    if not sandbox.quota:  # watched: the figure it stopped at, as docs/engines.md bounds it
        written = int(str(caught.value).split(" wrote ")[1].split(" bytes")[0].replace(",", ""))
        assert written <= 3 * cap, written


def test_3_a_non_dumpable_process_cannot_hide_deleted_but_open_files(
    make: Callable[..., DockerSandbox], provider: BlockingProvider
) -> None:
    """A process that makes itself non-dumpable and holds 1 GiB of files unlinked but kept open
    under a 128 MiB cap (before: 1.4 GiB held 40 s, nothing flagged): root's scan keeps
    CAP_SYS_PTRACE and sees it; the task ends ``disk_limit``."""
    cap = 128 * MiB
    sandbox = make(disk_limit=cap, disk_check_s=0.5)
    sandbox.put_files("/tmp", {"hold.py": HIDDEN_HOLDER.encode()})
    with pytest.raises(AgentFault) as caught:
        said = sandbox.exec("python3 /tmp/hold.py 16 30", timeout=120)
        print(f"the holder ended without a disk_limit: {said.output!r}")
    assert caught.value.reason == "disk_limit", caught.value
    print(f"\n[{provider.name}] {caught.value}")


def test_3_the_agent_cannot_use_root_s_ptrace(make: Callable[..., DockerSandbox]) -> None:
    """Root keeps CAP_SYS_PTRACE for the scan; the agent's processes hold no capability and
    cannot trace, read the memory, environment or files of any process that is not theirs."""
    sandbox = make()
    probe = (
        "grep -E '^Cap(Prm|Eff|Bnd|Amb)' /proc/self/status; "
        "for f in environ mem; do cat /proc/1/$f >/dev/null 2>&1 && echo read-$f; done; "
        "ls /proc/1/fd >/dev/null 2>&1 && echo read-fd; "
        "python3 -c 'import ctypes; print(\"ptrace\", ctypes.CDLL(None).ptrace(16, 1, 0, 0))'"
    )
    result = sandbox.exec(probe, timeout=20)
    caps = [line.split()[1] for line in result.output.splitlines() if line.startswith("Cap")]
    assert caps == ["0000000000000000"] * 4, result.output
    assert "read-" not in result.output, result.output
    assert "ptrace -1" in result.output, result.output  # PTRACE_ATTACH to pid 1: refused


def test_4_the_agent_cannot_fill_the_container_log(
    make: Callable[..., DockerSandbox], provider: BlockingProvider
) -> None:
    """Writing to pid 1's stdout filled the engine's json-file log, unmetered (1.2 GiB under a
    128 MiB cap). Pid 1 is root's now, and the engine keeps no log of a task container."""
    sandbox = make(disk_limit=128 * MiB)
    result = sandbox.exec("head -c 64M /dev/zero > /proc/1/fd/1; echo rc=$?", timeout=60)
    assert "Permission denied" in result.output and "rc=1" in result.output, result.output
    attrs = provider.provider.client.api.inspect_container(sandbox.id)
    assert attrs["HostConfig"]["LogConfig"]["Type"] == "none"
    assert not attrs.get("LogPath")  # nowhere on the engine's disk


def test_5_the_agent_cannot_replace_what_green_runs(make: Callable[..., DockerSandbox]) -> None:
    """Replacing ``/usr/bin/bash``, ``/bin/sh`` or adding ``/etc/ld.so.preload`` (green's
    driver and execs run them as root) is refused: a trojan cannot run between commands."""
    sandbox = make()
    trojan = "printf '#!/bin/sh\\necho pwned >> /tmp/beat\\n' > /tmp/t; chmod +x /tmp/t"
    attempts = [
        "cp /tmp/t /usr/bin/bash",
        "cp /tmp/t /bin/sh",
        "echo /tmp/evil.so > /etc/ld.so.preload",
        "ln -sf /tmp/t /usr/local/bin/setpriv",
        "mv /usr/bin/setpriv /tmp/",
    ]
    result = sandbox.exec(
        trojan + "; " + "; ".join(f"{a} 2>/dev/null || echo refused" for a in attempts), timeout=20
    )
    assert result.output.count("refused") == len(attempts), result.output
    for i in range(3):
        assert sandbox.exec(f"echo clean-{i}", timeout=20).output == f"clean-{i}\n"
    beats = sandbox.exec("cat /tmp/beat 2>/dev/null | wc -l", timeout=20)
    assert beats.output == "0\n", beats.output


def test_6_odd_files_at_submission_are_the_agent_s_and_name_no_host_path(
    make: Callable[..., DockerSandbox],
) -> None:
    """``ln -s loc.json loc.json``: the engine's error named its own disk
    (``/var/lib/docker/overlay2/<id>/merged``) and green took it for infra. A link (a loop, out
    of the workspace, a directory on the path), a directory, a fifo or a device is what the
    agent left: UnreadableFile, naming only the container path."""
    sandbox = make()
    shared = "/workspace/shared"
    sandbox.exec(
        f"mkdir -p {shared} /workspace/d && cd {shared} && ln -s loc.json loc.json && "
        "ln -s /etc/passwd out.json && mkfifo fifo.json && mkdir dir.json && "
        "ln -s /etc /workspace/d/shared",
        timeout=20,
    )
    odd = {
        f"{shared}/loc.json": "symbolic link",
        f"{shared}/out.json": "symbolic link",
        f"{shared}/fifo.json": "not a regular file",
        f"{shared}/dir.json": "directory",
        "/workspace/d/shared/passwd": "symbolic link",
        "/dev/null": "not a regular file",
    }
    for path, why in odd.items():
        with pytest.raises(UnreadableFile) as caught:
            sandbox.read_file(path)
        assert why in str(caught.value), (path, caught.value)
        assert "/var/lib" not in str(caught.value) and sandbox.name not in str(caught.value)
    with pytest.raises(FileNotFoundError) as missing:
        sandbox.read_file(f"{shared}/none.json")
    assert "/var/lib" not in str(missing.value)


def in_the_container(sandbox: DockerSandbox) -> None:
    """Open files scanned as green sees them without the engine's host (a remote engine, green
    in a container): by an exec in the container, not from the host (before the first
    measurement)."""
    sandbox.sandbox._usage._host_asked = True


@pytest.mark.parametrize("provider", ["default"], indirect=True)  # an enforced quota scans nothing
def test_40_5_a_scan_that_fails_is_no_measurement_and_the_disk_turns_unknown(
    make: Callable[..., DockerSandbox], provider: BlockingProvider
) -> None:
    """A scan whose exec fails (here its ``find`` is gone: as when the engine answers an exec
    with an OCI error, which the scan once read as its output and counted 0 bytes) raises
    MeasurementFailed; a few in a row while commands run make the task's disk use *unknown*."""
    sandbox = make(disk_limit=256 * MiB, disk_check_s=0.2)
    in_the_container(sandbox)
    sandbox.setup("rm -f /usr/bin/find", 20)  # green's own set-up, as root
    with pytest.raises(MeasurementFailed):
        hidden_bytes(provider.provider.client.api, sandbox.id)
    assert sandbox.disk_unknown is None
    sandbox.exec("sleep 4", timeout=20)
    deadline = time.monotonic() + 10
    while sandbox.disk_unknown is None and time.monotonic() < deadline:
        sandbox.exec("sleep 0.5", timeout=20)
    assert sandbox.disk_unknown and "scan of open files failed" in sandbox.disk_unknown
    [row] = provider.run(provider.provider.engines)  # the operator's /healthz shows the count
    assert row["disk_unknown"] >= 1, row
    print(f"\n{sandbox.disk_unknown}")


@pytest.mark.parametrize("provider", ["default"], indirect=True)
def test_52_2_green_s_own_folder_is_out_of_the_agent_s_reach_and_filled_at_any_time(
    make: Callable[..., DockerSandbox],
) -> None:
    """Issue #52, attack 2: a box's ``private_dir`` is root's and ``0711`` before anything runs;
    after the agent's commands green still copies inputs into it (and nowhere else), and the
    agent can read an input it is told the name of, but neither list the folder nor replace,
    rewrite or remove what is in it."""
    with pytest.raises(ValueError, match="private_dir"):
        SandboxSpec(image=IMAGE, task_id="t", ref_id="r", private_dir="/tmp/green")
    sandbox = make(private_dir="/.arena-test", writable=("/.arena-test/out",))
    assert sandbox.exec("stat -c '%U %a' /.arena-test; id -u", 20).output == "root 711\n1000\n"
    sandbox.put_files("/.arena-test", {"in-1": b"input"})  # after the agent's first command
    with pytest.raises(SandboxError, match="only before the agent"):
        sandbox.put_files("/tmp", {"x": b"x"})
    tried = sandbox.exec(
        "cat /.arena-test/in-1; echo; ls /.arena-test; mv /.arena-test /tmp/gone;"
        " echo x > /.arena-test/in-1; rm -f /.arena-test/in-1; echo x > /.arena-test/in-2;"
        " touch /.arena-test/out/mine && echo mine",
        20,
    ).output
    assert tried.startswith("input\n") and tried.endswith("mine\n"), tried
    assert tried.count("Permission denied") == 5, tried
    assert sandbox.read_file("/.arena-test/in-1") == b"input"


@pytest.mark.parametrize("provider", ["default"], indirect=True)  # an enforced quota scans nothing
def test_52_3_a_judging_box_whose_disk_cannot_be_measured_is_stopped(
    make: Callable[..., DockerSandbox],
) -> None:
    """Issue #52, attack 3's second half: in a box that runs the agent's code for a judge
    (``unmeasured_stops``), a disk use that turns unknown (every scan fails: its ``find`` is
    gone) stops the container as the agent's ``disk_unmeasured`` instead of leaving the cap
    unwatched (a task container runs on, as above)."""
    sandbox = make(disk_limit=256 * MiB, disk_check_s=0.2, unmeasured_stops=True)
    in_the_container(sandbox)
    sandbox.setup("rm -f /usr/bin/find", 20)
    with pytest.raises(AgentFault) as caught:
        sandbox.exec("sleep 30", timeout=60)
    assert caught.value.reason == "disk_unmeasured", caught.value
    assert "scan of open files failed" in str(caught.value), caught.value


def test_an_image_without_setpriv_fails_clearly_as_infra(
    make: Callable[..., DockerSandbox],
) -> None:
    """The agent's commands need ``setpriv`` (util-linux) to run as a uid of their own: an
    image without it fails the first command as infra, saying so, and never runs it as root."""
    sandbox = make()
    sandbox.setup("rm -f /usr/bin/setpriv /bin/setpriv", 20)
    with pytest.raises(SandboxError) as caught:
        sandbox.exec("touch /i-ran-as-root", timeout=20)
    assert not isinstance(caught.value, AgentFault)
    assert "has no setpriv" in str(caught.value), caught.value
