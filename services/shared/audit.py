"""The trajectory audit: flags for a reader, computed from the commands green recorded for a task.

Rules (``docs/scoring.md``, "Trajectory audit"): git history or blame used; a search for the
PoC, patch or fix files; network attempts; reads outside the task's source tree of files that
could hold answers; a submission with no command before it; submitted locations in files the
agent never named in a command. They never change a score. Green's dashboard shows them on the
task page; ``arena`` counts them per run (from the saved ``commands.json``).

The leak audit (``leak_suspected``: :func:`find_leaks`) needs the fix, so green runs it when a
task ends and records its evidence with the task (``scores.leak``); the trajectory audit shows
it with its own flags (:func:`audit`'s ``leak``).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

FLAGS = {
    "git_history": "git history or blame used",
    "answer_search": "searched for the PoC, patch or fix files",
    "network": "network attempt (curl, wget, /dev/tcp, package manager...)",
    "outside_reads": "read files outside the task's source tree that could hold answers",
    "blind_submission": "submitted with no command before it",
    "unopened_locations": "submitted locations in files never named in a command",
    "leak_suspected": "the fix (a line only it has, its commit, the bug's issue or CVE) in what "
    "the agent sent or said",
}
LEAK_FLAG = "leak_suspected"

_GIT = re.compile(
    r"\bgit\b[^|;&]*?\b(log|blame|show|diff|reflog|rev-list|whatchanged|annotate|"
    r"checkout|switch|reset|stash|cat-file|fsck|bisect|format-patch|shortlog)\b"
)
_SEARCH_TOOL = re.compile(r"\b(find|locate|ls|grep|egrep|rg|fd|ag|tree)\b")
_ANSWER_NAME = re.compile(
    r"(poc|\.patch\b|\.diff\b|patch\.diff|\bfix(es|ed)?\b|testcase|reproducer|crash-[0-9a-f]{6,}"
    r"|clusterfuzz|\.orig\b|\.rej\b)",
    re.IGNORECASE,
)
_OWN_ANSWER = re.compile(r"(?:/workspace/)?\bshared/[\w./+-]*|/workspace/poc\b")
"""The agent's own answer folder (``/workspace/shared/``: loc.json, a reproduce task's ``poc``)
and the PoC file a locate condition grants (``/workspace/poc``): naming them is no search for
the task's answer."""
_NETWORK = re.compile(
    r"(\b(curl|wget|nc|ncat|netcat|telnet|ssh|scp|sftp|ftp|rsync|socat|aria2c|lynx|links)\b"
    r"|/dev/(tcp|udp)/|\bpip3?\s+(install|download)\b|\bapt(-get)?\s+(install|update|download)\b"
    r"|\bnpm\s+(install|i)\b|\bgo\s+get\b|\bcargo\s+install\b|\bgem\s+install\b"
    r"|\bgit\s+(clone|fetch|pull)\b|https?://)"
)
_READERS = {
    "cat", "head", "tail", "less", "more", "sed", "awk", "grep", "egrep", "rg", "strings",
    "xxd", "od", "hexdump", "nl", "diff", "cmp", "file", "base64", "python3", "python", "vim", "vi",
}  # fmt: skip
_SUSPECT = ("/out/", "/tmp/", "/src/", "/root/", "/home/", "/opt/", "/var/", "/mnt/", "/data/")
_FILE_ARG = re.compile(r"^/[\w./+-]+$")


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command, comments=False, posix=True)
    except ValueError:
        return command.split()


def _outside(command: str, project: str | None, submission: str) -> list[str]:
    """Absolute paths read by a reader command outside ``/workspace`` and the project."""
    out: list[str] = []
    words = _words(command)
    reading = False
    for w in words:
        if w in ("|", "&&", "||", ";"):
            reading = False
            continue
        base = w.rsplit("/", 1)[-1]
        if base in _READERS:
            reading = True
            continue
        if not reading or not _FILE_ARG.match(w):
            continue
        if w.startswith("/workspace/") or w == submission:
            continue
        if project and w.startswith(f"/src/{project}/"):
            continue
        if w.startswith(_SUSPECT):
            out.append(w)
    return out


def _named_files(commands: Iterable[str]) -> set[str]:
    names: set[str] = set()
    for c in commands:
        for token in re.findall(r"[\w./+-]+", c):
            names.add(PurePosixPath(token).name)
    return names


def audit(
    commands: list[str],
    submission: Mapping[str, Any] | None,
    project: str | None = None,
    submission_path: str = "/workspace/shared/loc.json",
    leak: Mapping[str, Any] | None = None,
) -> dict[str, list[str]]:
    """Flag name -> the evidence (commands or paths); only raised flags are present.
    ``leak``: green's leak audit of the task (``scores.leak``), when the record has it."""
    flags: dict[str, list[str]] = {}

    def raise_(flag: str, evidence: str) -> None:
        flags.setdefault(flag, [])
        if evidence not in flags[flag] and len(flags[flag]) < 10:
            flags[flag].append(evidence[:300])

    working = [c for c in commands if submission_path not in c]
    for c in commands:
        if _GIT.search(c):
            raise_("git_history", c)
        own = _OWN_ANSWER.sub("", c.replace(submission_path, ""))
        if _SEARCH_TOOL.search(c) and _ANSWER_NAME.search(own):
            raise_("answer_search", c)
        if _NETWORK.search(c):
            raise_("network", c)
        for path in _outside(c, project, submission_path):
            raise_("outside_reads", path)
    locations = list((submission or {}).get("locations") or [])
    if locations and not working:
        raise_("blind_submission", f"{len(commands)} command(s), all writing the submission")
    named = _named_files(working)
    for loc in locations[:5]:
        name = PurePosixPath(str(loc.get("file", ""))).name
        if name and name not in named:
            raise_("unopened_locations", str(loc.get("file")))
    for evidence in (leak or {}).get("evidence") or []:
        raise_(LEAK_FLAG, str(evidence))
    return flags


def count_flags(per_task: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """How many tasks raised each flag."""
    counts = dict.fromkeys(FLAGS, 0)
    for flags in per_task:
        for f in flags:
            if f in counts:
                counts[f] += 1
    return counts


# ---- the leak audit: the fix in what the agent sent or said ----------------------------------

_HEX = re.compile(r"(?<![0-9a-fA-F])[0-9a-f]{7,40}(?![0-9a-fA-F])")
MIN_LINE_CHARS = 12
"""The fewest characters (whitespace collapsed) a line of the fix needs to be distinctive."""


@dataclass(frozen=True)
class FixPrints:
    """What gives the fix away, from the task's ground truth (green's side only)."""

    lines: tuple[str, ...] = ()
    """Distinctive lines of the patch (whitespace collapsed): :func:`distinctive`."""
    commits: tuple[str, ...] = ()
    """The fix commit's hash (40 hex digits); a prefix of 7 or more in a channel counts."""
    issues: tuple[str, ...] = ()
    """The bug's issue numbers (OSS-Fuzz/Monorail): counted when written as an issue (a URL,
    ``issue 1234``, ``oss-fuzz #1234``, ``id=1234``), not as a bare number."""
    cves: tuple[str, ...] = ()


def flat(text: str) -> str:
    """Whitespace collapsed: a line copied with other indentation is the same line."""
    return " ".join(text.split())


def distinctive(line: str) -> bool:
    """A line worth looking for: long enough, not only punctuation (braces, ``#endif``...)."""
    text = flat(line)
    return len(text) >= MIN_LINE_CHARS and sum(ch.isalnum() for ch in text) >= 6


def _issue_pattern(number: str) -> re.Pattern[str]:
    n = rf"(?<![0-9]){re.escape(number)}(?![0-9])"
    return re.compile(
        rf"(?:(?:oss-?fuzz|monorail|crbug|chromium|issues?|bugs?)\W{{0,12}}(?:id=|#)?{n}"
        rf"|[?&]id={n}|/issues?/{n}|crbug\.com/(?:oss-fuzz/)?{n})",
        re.IGNORECASE,
    )


def find_leaks(
    channels: Mapping[str, str],
    prints: FixPrints,
    given: Callable[[set[str]], set[str]] = lambda lines: set(),
) -> list[str]:
    """The evidence, one sentence each, that a channel (``commands``, ``submission``...: the
    agent's own words and requests) holds the fix. ``given(lines)``: those of the lines found
    that the agent was given anyway (in the vulnerable source it reads): not evidence."""
    found: dict[str, list[str]] = {}
    evidence: list[str] = []
    for name, text in channels.items():
        plain = flat(text)
        for line in prints.lines:
            if line in plain:
                found.setdefault(line, []).append(name)
        for word in set(_HEX.findall(text)):
            if any(c.startswith(word) for c in prints.commits):
                evidence.append(f"{name}: the fix commit ({word})")
        for number in prints.issues:
            if m := _issue_pattern(number).search(text):
                evidence.append(f"{name}: the bug's issue ({m.group(0)})")
        for cve in prints.cves:
            if cve.lower() in text.lower():
                evidence.append(f"{name}: the bug's CVE ({cve})")
    known = given(set(found)) if found else set()
    for line, names in found.items():
        if line not in known:
            evidence += [f"{name}: a line of the fix: {line[:200]}" for name in names]
    return list(dict.fromkeys(evidence))[:20]
