"""How far past its disk cap a task container's writes get, on this engine's storage.

A container with a disk cap writes 4 GiB three ways (one file; 4 files of 1 GiB in parallel;
16 files of 256 MiB in parallel), then as a hostile agent would: 5 files of 250 MiB written and
8 of 250 MiB allocated at once (``fallocate``), each unlinked and held open (what ``SizeRw``
cannot see), and 150,000 ``mkdir``s (entries ``SizeRw`` does not count). For each, the host's
disk growth (its peak, ``statvfs`` of the engine's data root sampled every 20 ms while the
command runs: deleted-but-open files are freed when it ends) and the writable layer's size
(``SizeRw``) are printed as ratios to the cap. The baseline is the same
single-file write without a cap, measured in the same run (it shows the 4 GiB really land).

    .venv/bin/python bench/bench_disk_cap.py [--cap-mib 2048] [--image arena/arvo-base:bookworm]

Needs a Docker engine whose data root is on a local filesystem (``df`` must see it), and\npython3 in the image.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import docker

from services.sandbox.base import AgentFault, SandboxSpec
from services.sandbox.blocking import BlockingProvider
from services.sandbox.docker import DockerSandboxProvider

WRITES = {
    "1 x 4 GiB": "head -c 4G /dev/zero > /workspace/big; echo rc=$?",
    "4 x 1 GiB": "for i in 1 2 3 4; do head -c 1G /dev/zero > /workspace/f$i & done; wait",
    "16 x 256 MiB": "for i in $(seq 16); do head -c 256M /dev/zero > /workspace/f$i & done; wait",
    "5 x 250 MiB deleted-open, written": "python3 /tmp/held.py write 5",
    "8 x 250 MiB deleted-open, fallocate": "python3 /tmp/held.py fallocate 8",
    "150,000 mkdirs": "python3 -c 'import os; [os.makedirs(f\"/tmp/m/{i}\") for i in range(150000)]'",
}
HELD = b"""
import os, signal, sys, time
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
fds = []
for i in range(int(sys.argv[2])):  # each file under the cap (no single file may pass it)
    fd = os.open(f"/tmp/held{i}", os.O_CREAT | os.O_WRONLY, 0o600)
    os.unlink(f"/tmp/held{i}")
    if sys.argv[1] == "fallocate":
        os.posix_fallocate(fd, 0, 250 << 20)
    else:
        for _ in range(250):
            os.write(fd, bytes(1 << 20))
    fds.append(fd)
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


def run(provider, image: str, cap: int | None, command: str, root: str) -> tuple[int, int, str]:
    spec = SandboxSpec(
        image=image,
        task_id="bench",
        ref_id="disk",
        memory="1g",
        disk_limit=cap,
        writable=("/workspace",),  # the agent's, as a task's
    )
    sandbox = provider.create(spec)
    try:
        sandbox.put_files("/tmp", {"held.py": HELD})
        sandbox.exec("sync", 60)
        peak = Peak(root)
        try:
            result = sandbox.exec(command, 300)
            how = f"exit {result.exit_code}"
        except AgentFault as exc:
            how = exc.reason
        grown = peak.stop()
        size = sandbox.disk_used() or 0
        return grown, size, how
    finally:
        sandbox.remove()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cap-mib", type=int, default=2048)
    ap.add_argument("--image", default="arena/arvo-base:bookworm")
    args = ap.parse_args()
    client = docker.from_env()
    info = client.info()
    root = info["DockerRootDir"]
    provider = BlockingProvider(DockerSandboxProvider(client, label_prefix="arenabench"))
    cap = args.cap_mib * 2**20
    print(
        f"storage driver {info['Driver']} ({dict(info['DriverStatus']).get('Backing Filesystem')})"
    )
    base, base_rw, how = run(provider, args.image, None, WRITES["1 x 4 GiB"], root)
    print(
        f"baseline (no cap), 1 x 4 GiB: host disk +{base / 2**20:,.0f} MiB, SizeRw "
        f"{base_rw / 2**20:,.0f} MiB ({how})"
    )
    print(f"cap {args.cap_mib:,} MiB       host growth / cap   SizeRw / cap   ended by")
    for name, command in WRITES.items():
        started = time.monotonic()
        grown, size, how = run(provider, args.image, cap, command, root)
        print(
            f"  {name:36s}   {grown / cap:14.3f}   {size / cap:12.3f}   {how}"
            f"  ({time.monotonic() - started:.1f} s; baseline ratio {grown / max(base, 1):.3f})"
        )


if __name__ == "__main__":
    main()
