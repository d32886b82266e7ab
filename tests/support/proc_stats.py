"""What a process holds, read from ``/proc``: open files, threads, resident memory."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ProcStats:
    """One reading of a process: its open file descriptors (files and sockets), its threads and
    its resident set size."""

    fds: int
    threads: int
    rss_mb: float

    def __str__(self) -> str:
        return f"{self.fds} open files, {self.threads} threads, RSS {self.rss_mb:.0f} MB"


def proc_stats(pid: int) -> ProcStats:
    """The process's figures now (Linux)."""
    proc = Path(f"/proc/{pid}")
    status = dict(
        line.split(":", 1) for line in (proc / "status").read_text().splitlines() if ":" in line
    )
    rss_kb = int(status["VmRSS"].split()[0])
    return ProcStats(
        fds=len(os.listdir(proc / "fd")),
        threads=int(status["Threads"]),
        rss_mb=rss_kb / 1024,
    )
