"""The build a process reports (green's provenance, purple's card, a run's manifest): the commit
and dirty flag of a real git checkout, the lock file's sha256, and None, never a guess, outside
a checkout."""

from __future__ import annotations

import hashlib
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from services.shared.build_info import build_info, describe, recorded

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


def test_outside_a_checkout_the_image_builds_record_is_reported(tmp_path: Path) -> None:
    """A service image has no checkout: its build recorded the checkout it was built from (the
    command deploy/Dockerfile runs), and that is what the service reports."""
    lock = tmp_path / "uv.lock"
    lock.write_text("version = 1\n")
    record = tmp_path / "arena-build.json"
    commit = "0123456789abcdef0123456789abcdef01234567"
    subprocess.run(
        [sys.executable, "-m", "services.shared.build_info", commit, "false", lock, record],
        check=True,
    )
    (tmp_path / "plain").mkdir()
    facts = describe(tmp_path / "plain", record)
    assert (facts["commit"], facts["dirty"]) == (commit, False)
    assert facts["lock_sha256"] == hashlib.sha256(b"version = 1\n").hexdigest()

    repo = tmp_path / "repo"  # a checkout is read as it is, whatever a record says
    head = _checkout(repo)
    assert describe(repo, record)["commit"] == head


@pytest.mark.parametrize(
    "text",
    [
        "",
        "[1, 2]",
        '{"commit": "HEAD", "dirty": "no", "lock_sha256": "abc"}',
        '{"commit": "0123456789ABCDEF0123456789ABCDEF01234567", "dirty": 1}',
    ],
)
def test_a_record_that_says_nothing_sure_gives_none(tmp_path: Path, text: str) -> None:
    record = tmp_path / "arena-build.json"
    record.write_text(text)
    (tmp_path / "plain").mkdir()
    facts = describe(tmp_path / "plain", record)
    assert (facts["commit"], facts["dirty"], facts["lock_sha256"]) == (None, None, None)
    assert recorded(tmp_path / "absent.json") == {
        "commit": None,
        "dirty": None,
        "lock_sha256": None,
    }
