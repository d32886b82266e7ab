"""How far past its disk cap a container's writes get, on this engine's storage, per write pattern.

Each pattern runs at full writer speed, as the agent's uid, in a task container (as a task's:
``/workspace`` the agent's) and in a judging box (made as green's fix and reproduce judges make
theirs, :class:`JudgeBox`), both with the cap:

- files: one of 4 GiB; 16 of 256 MiB in parallel;
- files unlinked and held open (what ``SizeRw`` cannot see): 8 of 250 MiB written in parallel;
  8 of 250 MiB reserved with ``posix_fallocate``; one reserved with ``fallocate(2)``'s
  ``FALLOC_FL_KEEP_SIZE``, 4 GiB in one call (``RLIMIT_FSIZE`` does not apply to it); and
  1 GiB reserved that way past a visible file's size;
- inodes: 150,000 ``mkdir``s by 4 processes in parallel.

For each, the host's disk growth (its peak: ``statvfs`` of the engine's data root every 20 ms
while the command runs; deleted-but-open files are freed when it ends) is printed as a ratio to
the cap. The baseline is the same single-file write without a cap, measured in the same run (it
shows the 4 GiB really land).

    uv run --frozen python bench/bench_disk_cap.py [--cap-mib 256] [--own-engine]

Needs a Docker engine whose data root is on a local file system (``df`` must see it) and python3
in the images. On the machine's own engine, everything else that writes to its file system
moves the figures; ``--own-engine`` (root) runs a second engine on a loop-mounted ext4 of its
own (tests/support/second_dockerd.py), loads the images there, and reads that file system alone.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import docker

from services.green.kinds.arvo.builds.box import Bounds, JudgeBox
from services.sandbox.base import AgentFault, SandboxSpec
from services.sandbox.blocking import BlockingProvider, BlockingSandbox
from services.sandbox.docker import DockerSandboxProvider
from tests.support.second_dockerd import EXT4_BYTES, start_second_dockerd, stop_second_dockerd

MKDIRS = (
    "python3 -c 'import os, sys; d = sys.argv[1]; os.mkdir(d); "
    '[os.mkdir(f"{d}/{i}") for i in range(37500)]\' /tmp/m$i'
)
WRITES = {
    "files: 1 x 4 GiB": "head -c 4G /dev/zero > /tmp/big; echo rc=$?",
    "files: 16 x 256 MiB": "for i in $(seq 16); do head -c 256M /dev/zero > /tmp/f$i & done; wait",
    "deleted-open: 8 x 250 MiB written": "python3 /tmp/held.py write 8",
    "deleted-open: 8 x 250 MiB posix_fallocate": "python3 /tmp/held.py fallocate 8",
    "deleted-open: 1 x 4 GiB KEEP_SIZE": "python3 /tmp/held.py keep 1",
    "visible: 1 x 1 GiB KEEP_SIZE": "python3 /tmp/held.py visible 1",
    "inodes: 4 x 37,500 mkdirs": f"for i in 1 2 3 4; do {MKDIRS} & done; wait",
}
HELD = b"""
import ctypes, os, signal, sys, time
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong]
how, n = sys.argv[1], int(sys.argv[2])
for i in range(n - 1):  # one process per file: all of them at once
    if os.fork() == 0:
        break
else:
    i = n - 1
fd = os.open(f"/tmp/held{i}", os.O_CREAT | os.O_WRONLY, 0o600)
if how == "visible":  # past a visible file's size: SizeRw, a sum of sizes, never sees it
    libc.fallocate(fd, 1, 0, 1 << 30)
    time.sleep(20)
os.unlink(f"/tmp/held{i}")
if how == "fallocate":  # each file under the cap (no single file may pass it)
    os.posix_fallocate(fd, 0, 250 << 20)
elif how == "keep":  # FALLOC_FL_KEEP_SIZE: reserved past the file's size, RLIMIT_FSIZE unasked
    libc.fallocate(fd, 1, 0, 4 << 30)
else:
    for _ in range(250):
        os.write(fd, bytes(1 << 20))
time.sleep(3)
"""


class Peak:
    """The peak growth of a file system's used bytes, sampled every 20 ms in a thread."""

    def __init__(self, root: str) -> None:
        self.root, self.start, self.peak = root, shutil.disk_usage(root).used, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, shutil.disk_usage(self.root).used - self.start)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return max(self.peak, shutil.disk_usage(self.root).used - self.start)


def task_box(provider: BlockingProvider, image: str, cap: int | None) -> BlockingSandbox:
    spec = SandboxSpec(
        image=image, task_id="bench", ref_id="disk", memory="4g", disk_limit=cap,
        writable=("/workspace",),  # the agent's, as a task's
    )  # fmt: skip
    return provider.create(spec)


def judge_box(provider: BlockingProvider, image: str, cap: int | None) -> BlockingSandbox:
    box = provider.run(
        JudgeBox.create, provider.provider, image, build="vulnerable", task_id="bench",
        ref_id="disk", project=None, bounds=Bounds(memory="4g", disk_bytes=cap),
    )  # fmt: skip
    return BlockingSandbox(box.sandbox, provider.loop)


def run(sandbox: BlockingSandbox, command: str, root: str) -> tuple[int, str]:
    """The peak host growth while ``command`` runs in ``sandbox`` (removed after), and how it
    ended."""
    try:
        sandbox.put_files("/tmp", {"held.py": HELD})
        sandbox.exec("sync", 60)
        peak = Peak(root)
        try:
            result = sandbox.exec(command, 300)
            how = f"exit {result.exit_code}"
        except AgentFault as exc:
            how = exc.reason
        return peak.stop(), how
    finally:
        sandbox.remove()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cap-mib", type=int, default=256)
    ap.add_argument("--image", default="arena/python-base:3.11-bookworm")
    ap.add_argument("--judge-image", default="arena/python-base:3.11-bookworm")
    ap.add_argument("--only", help="run the patterns whose name holds this text")
    ap.add_argument("--own-engine", action="store_true", help="an ext4 engine of its own")
    args = ap.parse_args()
    if not args.own_engine:
        bench(docker.from_env(), args)
        return
    engine = start_second_dockerd(ext4_bytes=EXT4_BYTES)
    try:
        for image in {args.image, args.judge_image}:
            save = subprocess.Popen(["docker", "save", image], stdout=subprocess.PIPE)
            subprocess.run(
                ["docker", "-H", engine.url, "load", "-q"], stdin=save.stdout, check=True
            )
            assert save.wait() == 0
        bench(engine.client(), args)
    finally:
        stop_second_dockerd(engine)


def bench(client: docker.DockerClient, args: argparse.Namespace) -> None:
    info = client.info()
    root = info["DockerRootDir"]
    provider = BlockingProvider(DockerSandboxProvider(client, label_prefix="arenabench"))
    cap = args.cap_mib * 2**20
    fs = dict(info["DriverStatus"]).get("Backing Filesystem")
    print(f"storage driver {info['Driver']} ({fs}), cgroup v{info.get('CgroupVersion', '?')}")
    base, how = run(task_box(provider, args.image, None), WRITES["files: 1 x 4 GiB"], root)
    print(f"baseline (no cap), 1 x 4 GiB: host disk +{base / 2**20:,.0f} MiB ({how})")
    print(f"cap {args.cap_mib:,} MiB: host growth / cap (ended by)")
    print(f"  {'pattern':44s} {'task container':>24s} {'judging box':>24s}")
    for name, command in WRITES.items():
        if args.only and args.only not in name:
            continue
        cells = []
        for make, image in ((task_box, args.image), (judge_box, args.judge_image)):
            started = time.monotonic()
            grown, how = run(make(provider, image, cap), command, root)
            cells.append(f"{grown / cap:6.2f} ({how}, {time.monotonic() - started:4.1f} s)")
        print(f"  {name:44s} {cells[0]:>24s} {cells[1]:>24s}", flush=True)
    print(f"(baseline: the uncapped write grew the host by {base / 2**30:.2f} GiB)")
    provider.close()


if __name__ == "__main__":
    main()
