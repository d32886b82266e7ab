"""What gives an ARVO bug's fix away, for the leak audit (:func:`services.shared.audit.find_leaks`).

- the lines the fix adds that are distinctive (:func:`~services.shared.audit.distinctive`) and
  not in the vulnerable source anywhere (the agent reads that source: quoting it is its work);
  where the condition withholds the source, the lines it removes too;
- the fix commit's hash, where ``patch.diff`` names it (``From <sha>``, ``commit <sha>``);
- the bug's OSS-Fuzz (Monorail) issue: an ARVO id is its number, and any issue URL the patch
  names;
- any CVE id the patch names.
"""

from __future__ import annotations

import re
import tarfile
from collections.abc import Iterable
from pathlib import Path

from services.shared.audit import FixPrints, distinctive, flat

_COMMIT = re.compile(r"^(?:From|commit) ([0-9a-f]{40})\b", re.MULTILINE)
_ISSUE_URL = re.compile(
    r"(?:bugs\.chromium\.org/p/oss-fuzz/issues/detail\?id=|crbug\.com/(?:oss-fuzz/)?|"
    r"issues\.oss-fuzz\.com/issues/)([0-9]{3,12})",
    re.IGNORECASE,
)
_CVE = re.compile(r"\bCVE-\d{4}-\d{4,7}\b", re.IGNORECASE)
MAX_SOURCE_FILE = 8 << 20
"""Larger files of the vulnerable source are not searched for a line of the fix."""


def changed_lines(patch: str) -> tuple[list[str], list[str]]:
    """The lines ``patch`` adds and removes (their text, without the ``+``/``-``)."""
    added: list[str] = []
    removed: list[str] = []
    for line in patch.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            added.append(line[1:])
        elif line.startswith("-") and not line.startswith("---"):
            removed.append(line[1:])
    return added, removed


def fix_prints(patch: bytes, arvo_id: str, *, source_given: bool) -> FixPrints:
    text = patch.decode("utf-8", "replace")
    added, removed = changed_lines(text)
    candidates = added + ([] if source_given else removed)
    lines = tuple(dict.fromkeys(flat(x) for x in candidates if distinctive(x)))
    return FixPrints(
        lines=lines,
        commits=tuple(dict.fromkeys(_COMMIT.findall(text))),
        issues=tuple(dict.fromkeys([arvo_id, *_ISSUE_URL.findall(text)])),
        cves=tuple(dict.fromkeys(c.upper() for c in _CVE.findall(text))),
    )


def lines_in_source(archive: Path, lines: Iterable[str]) -> set[str]:
    """Which of ``lines`` (whitespace collapsed) the vulnerable source holds somewhere: one
    pass over ``repo-vul.tar.gz``, run only when a channel held a line of the fix."""
    wanted = set(lines)
    found: set[str] = set()
    with tarfile.open(archive) as tar:
        for member in tar:
            if not wanted - found:
                break
            if not member.isfile() or member.size > MAX_SOURCE_FILE:
                continue
            data = tar.extractfile(member)
            if data is None:
                continue
            text = flat(data.read().decode("utf-8", "replace"))
            found |= {line for line in wanted - found if line in text}
    return found
