"""The build a process reports (green's provenance, purple's card, a run's manifest): the commit
and dirty flag of a real git checkout, the lock file's sha256, and None, never a guess, outside
a checkout."""

from __future__ import annotations

import hashlib
import platform
import subprocess
from pathlib import Path

from services.shared.build_info import build_info, describe

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t.invalid", "-c", "commit.gpgsign=false"]


def _checkout(root: Path) -> str:
    (root / "services").mkdir(parents=True)
    (root / "services" / "app.py").write_text("print('hi')\n")
    (root / "uv.lock").write_text("version = 1\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "one"]):
        subprocess.run([*GIT, *args], cwd=root, check=True, capture_output=True)
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=root, check=True, capture_output=True, text=True
    ).stdout.strip()


def test_a_clean_checkout_then_each_kind_of_change(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    head = _checkout(root)
    clean = describe(root)
    assert (clean["commit"], clean["dirty"]) == (head, False)
    assert clean["lock_sha256"] == hashlib.sha256(b"version = 1\n").hexdigest()
    assert clean["python"] == platform.python_version()

    (root / "results").mkdir()
    (root / "results" / "run.json").write_text("{}")  # output, not code: still clean
    assert describe(root)["dirty"] is False
    (root / "services" / "new.py").write_text("x = 1\n")  # new code, not yet committed
    assert describe(root)["dirty"] is True
    (root / "services" / "new.py").unlink()
    (root / "uv.lock").write_text("version = 2\n")  # a tracked file changed
    changed = describe(root)
    assert changed["dirty"] is True and changed["commit"] == head
    assert changed["lock_sha256"] == hashlib.sha256(b"version = 2\n").hexdigest()


def test_outside_a_checkout_nothing_is_guessed(tmp_path: Path) -> None:
    outer = tmp_path / "outer"
    _checkout(outer)
    inner = outer / "services"  # inside a checkout, but not its root (like site-packages)
    for root in (tmp_path / "plain", inner):
        root.mkdir(exist_ok=True)
        facts = describe(root)
        assert (facts["commit"], facts["dirty"], facts["lock_sha256"]) == (None, None, None)


def test_the_running_code_names_this_checkout() -> None:
    facts = build_info()
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    assert facts["commit"] == (head or None) and facts["version"]
    assert facts["numpy"] and facts["scipy"]
    facts["commit"] = "changed"  # a copy: the next caller still reads the truth
    assert build_info()["commit"] == (head or None)
