"""A file system's growth while a command runs: the peak of its used bytes (``statvfs``), for
the disk-cap tests (on an engine whose data-root is a file system of its own, it is that
engine's containers' growth alone)."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path


def used(mount: Path) -> int:
    st = os.statvfs(mount)
    return (st.f_blocks - st.f_bfree) * st.f_frsize


class GrowthSampler:
    """The mount's used bytes, sampled every ``every`` seconds in a thread: the peak over a
    start."""

    def __init__(self, mount: Path, every: float = 0.02) -> None:
        self.mount, self.every, self.start, self.peak = mount, every, used(mount), 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.peak = max(self.peak, used(self.mount) - self.start)

    def __enter__(self) -> GrowthSampler:
        subprocess.run(["sync", "-f", str(self.mount)], check=False)
        self.start = used(self.mount)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, used(self.mount) - self.start)
