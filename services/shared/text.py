"""Text helpers both services use."""

from __future__ import annotations

import functools
import re


def clip_middle(text: str, limit: int, what: str = "characters cut") -> str:
    """``text`` when it has at most ``limit`` characters; else its head and tail with a line
    ``[... N <what> ...]`` between them, the whole at most ``limit`` characters long (as long as
    ``limit`` leaves room for that line)."""
    if len(text) <= limit:
        return text
    room = len(f"\n[... {len(text)} {what} ...]\n")
    half = max(1, (limit - room) // 2)
    return f"{text[:half]}\n[... {len(text) - 2 * half} {what} ...]\n{text[-half:]}"


_INVISIBLE = (
    "\x00-\x1f\x7f-\x9f"  # C0 and C1 controls (ESC starts terminal sequences), DEL
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"  # bidirectional marks, embeddings, isolates
    "\u2028\u2029"  # line and paragraph separators
)


@functools.cache
def _invisible(keep: str) -> re.Pattern[str]:
    kept = "".join(f"\\x{ord(c):02x}" for c in keep)
    return re.compile(f"(?![{kept}])[{_INVISIBLE}]" if keep else f"[{_INVISIBLE}]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str, keep: str = "\t\n") -> str:
    """``text`` with every control character (C0, DEL, C1) and every invisible character that
    reorders or breaks text (bidirectional controls such as U+202E, line separators) written as
    a visible escape (``\\x1b``, ``\\u202e``), except those in ``keep``. What an agent's command
    prints then cannot move a terminal's cursor, ring its bell, cut a log line at a NUL or make
    a page show code in another order than it runs."""
    return _invisible(keep).sub(_escaped, text)
