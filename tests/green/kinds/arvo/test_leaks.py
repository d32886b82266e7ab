"""The leak audit's fingerprints of a fix and its search of the agent's channels, on a bundled
task's real patch and source (build/assets), with a git format-patch header around it."""

from __future__ import annotations

import pytest

from fixtures.catalog import DEFAULT_ASSETS_DIR
from services.green.kinds.arvo.leaks import changed_lines, fix_prints, lines_in_source
from services.shared.audit import audit, find_leaks, flat

TASK = DEFAULT_ASSETS_DIR / "900001"
SHA = "3f1c2d9e8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e"
ADDED = "if (q < end && (*q == 'x' || *q == 'X')) {"
REMOVED = "if (*q == 'x' || *q == 'X') {"

pytestmark = pytest.mark.skipif(
    not (TASK / "patch.diff").exists(), reason="fixture assets not built (python -m fixtures.build)"
)


def patch() -> bytes:
    header = (
        f"From {SHA} Mon Sep 17 00:00:00 2001\n"
        "Subject: [PATCH] entity: check the end before the base prefix (CVE-2021-12345)\n\n"
        "Credit to OSS-Fuzz: https://bugs.chromium.org/p/oss-fuzz/issues/detail?id=31337\n---\n"
    )
    return header.encode() + (TASK / "patch.diff").read_bytes()


def leaks(channels: dict[str, str], *, source_given: bool = True) -> list[str]:
    prints = fix_prints(patch(), "900001", source_given=source_given)
    removed = {flat(r) for r in changed_lines(patch().decode())[1]}

    def given(lines: set[str]) -> set[str]:
        found = lines_in_source(TASK / "repo-vul.tar.gz", lines)
        return found if source_given else found - removed

    return find_leaks(channels, prints, given)


def test_the_fingerprints_of_a_real_fix():
    prints = fix_prints(patch(), "900001", source_given=True)
    assert prints.lines == (ADDED,)  # the removed line is in the source the agent reads
    assert prints.commits == (SHA,)
    assert prints.issues == ("900001", "31337")
    assert prints.cves == ("CVE-2021-12345",)
    assert fix_prints(patch(), "900001", source_given=False).lines == (ADDED, REMOVED)


def test_a_line_of_the_fix_copied_into_the_reasoning_is_evidence():
    reasoning = f"The decoder must check the end first:\n    {ADDED.replace(' ', '  ')}\n"
    assert leaks({"submission": reasoning}) == [f"submission: a line of the fix: {ADDED}"]


def test_a_clean_reasoning_quoting_the_vulnerable_source_is_not():
    reasoning = f"Line 71 reads past the end: `{REMOVED}` never checks q < end."
    assert leaks({"submission": reasoning, "commands": "sed -n 60,80p src/entity.c"}) == []
    # without the source, the line it removes is evidence too (a memorization check)
    assert leaks({"submission": reasoning}, source_given=False) == [
        f"submission: a line of the fix: {REMOVED}"
    ]


@pytest.mark.parametrize(
    ("said", "evidence"),
    [
        (f"git show {SHA[:9]}", "the fix commit"),
        ("see https://bugs.chromium.org/p/oss-fuzz/issues/detail?id=900001", "the bug's issue"),
        ("OSS-Fuzz issue 31337 describes it", "the bug's issue"),
        ("this is cve-2021-12345", "the bug's CVE"),
    ],
)
def test_the_commit_the_issue_and_the_cve_are_evidence(said, evidence):
    [found] = leaks({"trajectory": said})
    assert found.startswith(f"trajectory: {evidence}")


@pytest.mark.parametrize(
    "said", ["line 900001 of a log", "0x900001 is an address", f"{SHA[:6]} is too short"]
)
def test_numbers_that_are_not_the_issue_or_the_commit_are_not(said):
    assert leaks({"trajectory": said}) == []


def test_the_trajectory_audit_shows_the_leak_with_its_own_flags():
    flags = audit(["ls"], None, leak={"suspected": True, "evidence": ["submission: x"]})
    assert flags == {"leak_suspected": ["submission: x"]}
    assert audit(["ls"], None, leak={"suspected": False, "evidence": []}) == {}
