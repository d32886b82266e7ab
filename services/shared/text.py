"""Text helpers both services use."""

from __future__ import annotations


def clip_middle(text: str, limit: int, what: str = "characters cut") -> str:
    """``text`` when it has at most ``limit`` characters; else its head and tail with a line
    ``[... N <what> ...]`` between them, the whole at most ``limit`` characters long (as long as
    ``limit`` leaves room for that line)."""
    if len(text) <= limit:
        return text
    room = len(f"\n[... {len(text)} {what} ...]\n")
    half = max(1, (limit - room) // 2)
    return f"{text[:half]}\n[... {len(text) - 2 * half} {what} ...]\n{text[-half:]}"
