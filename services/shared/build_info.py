"""What code a process runs: the package version, the git commit and whether the checkout had
uncommitted changes, the sha256 of the lock file, and the versions of Python, numpy and scipy.

Green records it in each task's provenance, purple in its agent card, the ``arena`` client in a
run's ``manifest.json``: a score is reproducible only with the code and the locked dependencies
that produced it (numpy and scipy compute the intervals). Read once per process (the code does
not change under a running process; a restarted one reads it again). A fact that cannot be read
is ``None`` (a service installed from a wheel has no checkout: no commit, no dirty flag, no
``uv.lock``), never a guess. A service image (``deploy/Dockerfile``) has no checkout either; its
build records the commit, dirty flag and lock sha256 of the checkout it was built from
(:data:`BUILD_RECORD`), and a service run from it reports those.

    python -m services.shared.build_info COMMIT DIRTY LOCK_FILE [RECORD]   # the image build
"""

from __future__ import annotations

import json
import platform
import re
import subprocess
import sys
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from services.shared.digests import sha256_file

PACKAGE = "arvo-rca-arena"
SOURCE_ROOT = Path(__file__).resolve().parents[2]
"""The checkout's root when the services run from one (``uv run``): where ``uv.lock`` is."""
LOCK_FILE = "uv.lock"
CODE_DIR = "services"
LIBRARIES = ("numpy", "scipy")
"""Libraries whose versions decide the reported numbers (the estimators)."""
BUILD_RECORD = Path(sys.prefix) / "arena-build.json"
"""Where an image build records its checkout, beside the environment it installed."""


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _git(root: Path, *args: str) -> str | None:
    """``git args`` in ``root``: its stdout, or None when it fails (not a checkout, no git)."""
    try:
        out = subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def checkout(root: Path) -> dict[str, Any]:
    """``commit`` (HEAD) and ``dirty`` of the git checkout at ``root``; both None outside one.
    Dirty: a tracked file differs from HEAD, or an untracked file lies in ``services/`` (code
    that could run); other untracked files (results, build output) do not count."""
    top = _git(root, "rev-parse", "--show-toplevel")
    if top is None or Path(top.strip()).resolve() != root.resolve():
        return {"commit": None, "dirty": None}  # not this project's checkout (e.g. site-packages)
    commit = (_git(root, "rev-parse", "HEAD") or "").strip() or None
    tracked = _git(root, "status", "--porcelain", "--untracked-files=no")
    code = _git(root, "status", "--porcelain", "--untracked-files=all", "--", CODE_DIR)
    if tracked is None or code is None:
        return {"commit": commit, "dirty": None}
    return {"commit": commit, "dirty": bool(tracked.strip() or code.strip())}


def lock_sha256(root: Path) -> str | None:
    """sha256 of ``uv.lock`` at ``root`` (None without one)."""
    try:
        return sha256_file(root / LOCK_FILE)
    except OSError:
        return None


def recorded(path: Path = BUILD_RECORD) -> dict[str, Any]:
    """``commit``, ``dirty`` and ``lock_sha256`` as an image build recorded them at ``path``;
    each None where the record is absent, unreadable, or holds something else."""
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        record = {}
    if not isinstance(record, dict):
        record = {}

    def hexdigest(key: str, digits: int) -> str | None:
        value = record.get(key)
        ok = isinstance(value, str) and re.fullmatch(f"[0-9a-f]{{{digits}}}", value)
        return value if ok else None

    dirty = record.get("dirty")
    return {
        "commit": hexdigest("commit", 40),
        "dirty": dirty if isinstance(dirty, bool) else None,
        "lock_sha256": hexdigest("lock_sha256", 64),
    }


def write_record(commit: str, dirty: str, lock_file: Path, path: Path = BUILD_RECORD) -> None:
    """Record the checkout an image is built from (``dirty``: "true", "false", or "" for
    unknown; an empty ``commit``: unknown)."""
    record = {
        "commit": commit or None,
        "dirty": {"true": True, "false": False}.get(dirty),
        "lock_sha256": sha256_file(lock_file),
    }
    path.write_text(json.dumps(record) + "\n")


def describe(root: Path = SOURCE_ROOT, record: Path = BUILD_RECORD) -> dict[str, Any]:
    """The build of the code at ``root``; outside a checkout, what ``record`` says (see the
    module's docstring)."""
    facts = {**checkout(root), "lock_sha256": lock_sha256(root)}
    if facts["commit"] is None and facts["lock_sha256"] is None:  # no checkout, no lock here
        facts = recorded(record)
    return {
        "version": _version(PACKAGE),
        **facts,
        "python": platform.python_version(),
        **{name: _version(name) for name in LIBRARIES},
    }


def build_info() -> dict[str, Any]:
    """This process's build (:func:`describe` of the running code), read once (a copy)."""
    return dict(_running())


@cache
def _running() -> dict[str, Any]:
    return describe()


if __name__ == "__main__":
    commit, dirty, lock = sys.argv[1:4]
    write_record(commit, dirty, Path(lock), *(Path(arg) for arg in sys.argv[4:5]))
