"""A hostile agent against its own sandbox, on a real engine: nothing it starts outlives its
command, and a shell session it kills is its own failure, never infra.

The escape (issue #20, attack 1): a process that forks in a loop, each child starting the next
generation in a new session (``setsid``) and its parent exiting at once, so a scan of ``/proc``
always finds a pid that has already gone. Once it has lived two seconds it kills every shell
session green opens. The cleanup after each command (``kill(-1, SIGKILL)`` from the session's
driver, which the kernel delivers to every other process of the container in one pass that a
fork cannot race) must leave nothing of it behind.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import time
from collections.abc import Callable, Iterator

import docker
import docker.errors
import pytest

from services.sandbox.base import AgentFault
from services.sandbox.blocking import BlockingProvider
from services.sandbox.blocking import BlockingSandbox as DockerSandbox
from services.sandbox.docker import DockerSandboxProvider
from services.sandbox.docker.disk import LayerEntries
from tests.support.sandboxes import sandbox_maker

pytestmark = pytest.mark.docker

IMAGE = os.environ.get("ARENA_TEST_IMAGE", "arena/arvo-base:bookworm")
PREFIX = f"arenahostile{secrets.token_hex(3)}"

HOPPER = r"""
import os, sys, time

# Each generation forks the next and exits at once; the child leaves the session (setsid).
# From its second second of life on, every 20th generation kills green's shell sessions.
t0 = float(sys.argv[1]) if len(sys.argv) > 1 else time.time()
n = 0
while True:
    if os.fork():
        os._exit(0)
    os.setsid()
    n += 1
    if n % 20 == 0 and time.time() - t0 >= 2:
        for pid in os.listdir("/proc"):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if b"arena-session" in f.read():
                        os.kill(int(pid), 9)
            except (OSError, ValueError):
                pass
"""

LEFT = (
    "n=0; for s in /proc/[0-9]*/stat; do { read -r l < $s; } 2>/dev/null || continue;"
    ' set -- ${l##*") "}; case $4 in 1 | $$ | $PPID) ;; *) [ "$1" = Z ] || n=$((n+1)) ;; esac;'
    " done; echo $n"
)
"""How many live processes are in a session other than pid 1's (the keeper and its ``sleep``),
the driver's (``$PPID``) and this command's own."""


@pytest.fixture(scope="module")
def provider() -> Iterator[BlockingProvider]:
    try:
        client = docker.from_env()
        client.ping()
        client.images.get(IMAGE)
    except docker.errors.ImageNotFound:
        pytest.skip(f"test image {IMAGE} is not built")
    except Exception as e:
        pytest.skip(f"no Docker engine: {e}")
    provider = BlockingProvider(DockerSandboxProvider(client, label_prefix=PREFIX))
    yield provider
    provider.reap()
    provider.close()
    client.close()


@pytest.fixture
def make(provider: BlockingProvider) -> Iterator[Callable[..., DockerSandbox]]:
    with sandbox_maker(provider, IMAGE, memory="256m", pids_limit=256) as make:
        yield make


def _start_hopper(sandbox: DockerSandbox) -> None:
    sandbox.put_files("/tmp", {"hop.py": HOPPER.encode()})
    started = sandbox.exec("python3 /tmp/hop.py & sleep 0.5; echo started", timeout=20)
    assert started.output == "started\n", started.output


def test_a_forking_setsid_loop_does_not_outlive_its_command(
    make: Callable[..., DockerSandbox],
) -> None:
    sandbox = make()
    _start_hopper(sandbox)
    waited = sandbox.exec("sleep 3; echo alive", timeout=20)  # a survivor kills this session
    assert (waited.exit_code, waited.output) == (0, "alive\n"), waited.output
    time.sleep(2)
    after = sandbox.exec(LEFT, timeout=20)
    assert (after.exit_code, after.output) == (0, "0\n"), after.output


def test_a_forking_loop_that_kills_the_session_mid_command_is_gone_after_it(
    make: Callable[..., DockerSandbox],
) -> None:
    """The hopper starts and tries to kill the running command's own session, which is
    root's: it cannot (before, the command ended -1), and the next command finds nothing of it
    left."""
    sandbox = make()
    sandbox.put_files("/tmp", {"hop.py": HOPPER.encode()})
    survived = sandbox.exec("python3 /tmp/hop.py 0 & sleep 3", timeout=20)  # t0=0: kills at once
    assert survived.exit_code == 0, survived.output
    time.sleep(2)
    after = sandbox.exec(LEFT, timeout=20)
    assert (after.exit_code, after.output) == (0, "0\n"), after.output


def test_a_session_the_agent_kills_is_the_agents_failure(
    make: Callable[..., DockerSandbox],
) -> None:
    """Green's own container, whose commands run as root, breaks the shell every new session
    starts with: the container runs and the engine answers, so the lost session is the
    commands' doing (``session_killed``). An agent cannot do it (attack 5 below)."""
    sandbox = make(agent_uid=None)
    sandbox.exec("printf '#!/bin/true\\n' > /bin/sh.new; chmod +x /bin/sh.new", timeout=20)
    broken = sandbox.exec("mv /bin/sh.new /bin/dash; kill -9 $PPID", timeout=20)
    assert broken.exit_code == -1
    with pytest.raises(AgentFault) as caught:
        sandbox.exec("echo hi", timeout=20)
    assert caught.value.reason == "session_killed", caught.value
    assert "infra" not in str(caught.value)


# -- a watched disk cap (overlay2 on ext4: the engine cannot enforce one) -----------------------

HIDDEN_WRITER = """
import os, time
fds = []
for i in range(5):  # 5 x 250 MiB in files unlinked but kept open: du and SizeRw see nothing
    fds.append(os.open(f"/tmp/hidden{i}", os.O_CREAT | os.O_WRONLY, 0o600))
    os.unlink(f"/tmp/hidden{i}")
    for _ in range(250):
        os.write(fds[-1], b"x" * 2**20)
    os.fsync(fds[-1])
print("wrote 1250 MiB", flush=True)
time.sleep(5)
"""


def test_a_watched_cap_counts_deleted_but_open_files(make: Callable[..., DockerSandbox]) -> None:
    cap = 256 * 2**20
    sandbox = make(disk_limit=cap, disk_check_s=0.5)
    sandbox.put_files("/tmp", {"w.py": HIDDEN_WRITER.encode()})
    with pytest.raises(AgentFault) as caught:
        print(sandbox.exec("python3 /tmp/w.py", timeout=120))
    assert caught.value.reason == "disk_limit", caught.value
    print(f"\ndeleted-but-open under a watched {cap / 2**20:.0f} MiB cap: {caught.value}")


COUNTS = ["walked", "engine_diff"]
"""How a watched layer's entries are counted: walked on green's host (a local engine, as here),
or by the engine's diff (a remote engine, green in a container)."""


def counted_by(sandbox: DockerSandbox, how: str) -> list[float]:
    """Count ``sandbox``'s layer the way ``how`` says (before its first command), and return
    the list the time of each count is appended to (the real count runs)."""
    inner = sandbox.sandbox
    layer = LayerEntries.of(inner._client.api, inner._container.attrs)
    if layer.layer is None:
        pytest.skip("green cannot read this engine's data root: only its diff counts")
    if how == "engine_diff":
        layer = LayerEntries(inner._client.api, inner.id, None)
    counts: list[float] = []
    count = layer.count

    def counting(most: int | None = None) -> int:
        counts.append(time.monotonic())
        return count(most)

    layer.count = counting  # type: ignore[method-assign]
    inner._usage._layer = layer
    return counts


@pytest.mark.parametrize("how", COUNTS)
def test_a_directory_flood_in_short_commands_is_counted_after_them(
    make: Callable[..., DockerSandbox], how: str
) -> None:
    """Entries are counted while commands run and once after they end, not on a clock: a flood
    spread over short commands is still charged, and the task ends."""
    cap = 32 * 2**20  # 8,192 directories of 4 KiB
    sandbox = make(disk_limit=cap, disk_check_s=0.2)  # measured every 2 s between commands
    counted_by(sandbox, how)
    sandbox.exec("mkdir /tmp/m", timeout=20)
    deadline = time.monotonic() + 60
    with pytest.raises(AgentFault) as caught:  # in a flood's command or in a later one
        for first in range(1, 20_000, 5_000):
            sandbox.exec(f"cd /tmp/m && seq {first} {first + 4_999} | xargs mkdir", timeout=60)
        while time.monotonic() < deadline:
            sandbox.exec("true", timeout=20)
            time.sleep(0.5)
    assert caught.value.reason == "disk_limit", caught.value


@pytest.mark.parametrize("how", COUNTS)
def test_a_chain_deeper_than_path_max_hides_no_flood(
    make: Callable[..., DockerSandbox], how: str
) -> None:
    """The engine's diff fails on a path longer than PATH_MAX; before, its count then stood at
    the last one and a flood made after such a chain went unseen. Walked, the chain is counted
    like any entries; by the engine's diff, a layer it cannot walk counts as past the cap."""
    cap = 32 * 2**20
    sandbox = make(disk_limit=cap, disk_check_s=0.2)
    counted_by(sandbox, how)
    chain = 'python3 -c \'import os\nfor _ in range(20): os.mkdir(250 * "d"); os.chdir(250 * "d")\''
    deadline = time.monotonic() + 60
    with pytest.raises(AgentFault) as caught:
        made = sandbox.exec(f"mkdir /tmp/deep && cd /tmp/deep && {chain}", timeout=60)
        assert made.exit_code == 0, made  # 5,020 bytes of path
        sandbox.exec("mkdir /tmp/m && cd /tmp/m && seq 20000 | xargs mkdir", timeout=60)
        while time.monotonic() < deadline:
            sandbox.exec("true", timeout=20)
            time.sleep(0.5)
    assert caught.value.reason == "disk_limit", caught.value


def test_a_layer_the_engine_could_never_count_is_not_the_agents_disk_limit(
    make: Callable[..., DockerSandbox],
) -> None:
    """The deep-chain rule charges the agent only once a count of its layer has worked. A chain
    in the layer before the agent's first command (put there from outside here; an engine whose
    diff walks the whole tree also meets an image's own deep paths) makes every count fail, and
    the agent's harmless commands are not a ``disk_limit`` (they were, before the rule waited
    for a count that worked)."""
    sandbox = make(disk_limit=32 * 2**20, disk_check_s=0.2)
    counted_by(sandbox, "engine_diff")
    chain = "import os\nfor _ in range(20): os.mkdir(250 * 'd'); os.chdir(250 * 'd')"
    with contextlib.closing(docker.from_env()) as client:
        made = client.containers.get(sandbox.id).exec_run(["python3", "-c", chain], workdir="/tmp")
    assert made.exit_code == 0, made.output
    deadline = time.monotonic() + 8  # the baseline's count, then later ones every 2 s
    while time.monotonic() < deadline:
        assert sandbox.exec("echo hi", timeout=20).output == "hi\n"
        time.sleep(0.5)


def test_the_walk_counts_what_the_engines_diff_lists(make: Callable[..., DockerSandbox]) -> None:
    """Added, changed (copied up), deleted (a whiteout) and linked: the same number both ways,
    and a link to / is one entry (the host's tree is never walked)."""
    sandbox = make(disk_limit=256 * 2**20, disk_check_s=0.2, agent_uid=None)  # root: /etc
    counted_by(sandbox, "walked")
    sandbox.exec(
        "mkdir -p /tmp/a/b/c && touch /etc/passwd && rm -f /etc/group && ln -s / /tmp/root"
        " && mkdir /tmp/m && cd /tmp/m && seq 3000 | xargs mkdir",
        timeout=60,
    )
    inner = sandbox.sandbox
    walked = inner._usage._layer.count()
    listed = LayerEntries(inner._client.api, inner.id, None).count()
    assert walked == listed > 3_000


@pytest.mark.parametrize("how", COUNTS)
def test_an_idle_task_costs_no_count_of_its_entries(
    make: Callable[..., DockerSandbox], how: str
) -> None:
    """A count runs while commands do and once after them; a task waiting between commands
    (an agent thinking) costs none (the engine's diff may walk the container's whole tree)."""
    sandbox = make(disk_limit=256 * 2**20, disk_check_s=0.1)  # measured every second idle
    counts = counted_by(sandbox, how)
    sandbox.exec("mkdir /tmp/a && sleep 0.5", timeout=20)
    time.sleep(4)  # idle: four measurements or so; one of them counts what it added
    before = len(counts)
    time.sleep(4)
    assert before >= 2, counts  # the baseline's, and the one after the command
    assert len(counts) == before, "an idle task's entries were counted again"


HOLDER = """
import os, time
fd = os.open("/tmp/held", os.O_CREAT | os.O_WRONLY, 0o600)
os.unlink("/tmp/held")
for _ in range(48):  # 48 MiB only a scan of /proc/*/fd sees
    os.write(fd, b"x" * 2**20)
os.fsync(fd)
with open("/tmp/holder.pid", "w") as f:
    f.write(str(os.getpid()))
time.sleep(600)
"""


def test_a_command_is_not_charged_for_files_the_last_one_held(
    make: Callable[..., DockerSandbox],
) -> None:
    """Files deleted but still open die with the processes that hold them, and a command's end
    kills every process it left. The next command is measured without them: a scan's figure
    from before it started is not carried into it (before, its first measurements reused the
    last scan's, and a command far under the cap was stopped as over it)."""
    cap = 64 * 2**20
    sandbox = make(disk_limit=cap, disk_check_s=2.0)
    sandbox.put_files("/tmp", {"hold.py": HOLDER.encode()})
    sandbox.exec("true", timeout=20)  # the baseline
    with contextlib.closing(docker.from_env()) as client:
        container = client.containers.get(sandbox.id)
        container.exec_run(["python3", "/tmp/hold.py"], detach=True)  # as a command's would
        deadline = time.monotonic() + 30
        while container.exec_run(["test", "-s", "/tmp/holder.pid"]).exit_code != 0:
            assert time.monotonic() < deadline, "the holder did not start"
            time.sleep(0.1)
        time.sleep(2.1)  # one interval after the baseline: the next measurement scans
        deadline = time.monotonic() + 20  # beside it (never waited for): a later one has it
        while sandbox.disk_used() < 48 * 2**20:  # the scan sees what the holder hides
            assert time.monotonic() < deadline, "no scan counted the held file"
            time.sleep(0.2)
        container.exec_run(["sh", "-c", "kill -9 $(cat /tmp/holder.pid)"])  # as a command's end
    # 24 MiB paced (at most ~60 MiB/s over any two measurements): under the cap, and no writer
    # the watch stops for what it would write in STOP_LAG at its rate. Written at once (head at
    # ~220 MiB/s), a measurement that caught it mid-way projected it past the cap.
    paced = "for i in $(seq 24); do head -c 1M /dev/zero >> /tmp/visible; sleep 0.04; done"
    result = sandbox.exec(f"{paced}; sleep 1; echo done", timeout=30)
    assert result.output.strip() == "done", result


def test_a_watched_cap_counts_added_directories(make: Callable[..., DockerSandbox]) -> None:
    cap = 32 * 2**20  # 8,192 directories of 4 KiB: 20,000 overrun it (and are quick to remove)
    sandbox = make(disk_limit=cap, disk_check_s=0.5)
    flood = "mkdir /tmp/m && cd /tmp/m && seq 20000 | xargs mkdir; echo done; sleep 100"
    with pytest.raises(AgentFault) as caught:
        print(sandbox.exec(flood, timeout=120))
    assert caught.value.reason == "disk_limit", caught.value
    print(f"\n20,000 mkdirs under a watched {cap / 2**20:.0f} MiB cap: {caught.value}")


INJECTOR = r"""
import os, sys, time

# For argv[1] seconds: write a command of its own into the stdin of every other bash that waits
# for its command's text (the one the session's driver starts ahead for the next command).
mine = {os.getpid(), os.getppid()}
end = time.time() + float(sys.argv[1])
while time.time() < end:
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) in mine:
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"_arena_cmd" not in f.read():
                    continue
            with open(f"/proc/{pid}/fd/0", "w") as pipe:
                pipe.write("echo INJECTED\n")
        except OSError:
            pass
"""


def test_no_command_reaches_the_bash_started_for_the_next(
    make: Callable[..., DockerSandbox],
) -> None:
    """The next command's bash is started ahead, waiting on a pipe for its text: a process the
    agent leaves behind to write into that pipe (through ``/proc/<pid>/fd/0``) must be gone
    before it exists, and while a command runs no such bash exists yet."""
    sandbox = make()
    sandbox.put_files("/tmp", {"inject.py": INJECTOR.encode()})
    others = "ps -eo pgid=,args= | awk -v g=$$ '$1 != g && /bash -c IFS= read -r -d/' | wc -l"
    waiting = sandbox.exec(others, timeout=20)  # (its own group: its bash, forks of it)
    assert waiting.output == "0\n", waiting.output  # no bash waits for the next command
    started = sandbox.exec("python3 /tmp/inject.py 8 & sleep 0.5; echo started", timeout=20)
    assert started.output == "started\n", started.output
    for i in range(5):
        result = sandbox.exec(f"sleep 0.2; echo clean-{i}", timeout=20)
        assert (result.exit_code, result.output) == (0, f"clean-{i}\n"), result.output
