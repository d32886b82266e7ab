"""How the ``arena`` client writes a number: a mean with its 95% interval, or ``n/a`` and why.

One place for the reports (``report.md``, ``compare.md``, the breakdown tables) and the console,
so a mean over no task never prints as ``0.000`` and a missing interval never as ``[x, x]``.
"""

from __future__ import annotations

from typing import Any


def num(value: float | None, digits: int = 3) -> str:
    """``0.917``; ``n/a`` for no value (a mean over no task)."""
    return "n/a" if value is None else f"{float(value):.{digits}f}"


def signed(value: float | None, digits: int = 3) -> str:
    """``+0.143``; ``n/a`` for no value."""
    return "n/a" if value is None else f"{float(value):+.{digits}f}"


def bracket(iv: dict[str, Any] | None, digits: int = 2, sign: bool = False) -> str:
    """``[0.62, 1.00]``; ``[n/a: one project]`` when the interval could not be computed, with
    its reason; empty without an interval record (an aggregate stored before they existed)."""
    if not iv:
        return ""
    low, high = iv.get("ci_low"), iv.get("ci_high")
    if low is None or high is None:
        why = iv.get("no_interval")
        return f"[n/a: {why}]" if why else "[n/a]"
    f = signed if sign else num
    return f"[{f(low, digits)}, {f(high, digits)}]"


def with_interval(value: float | None, iv: dict[str, Any] | None, digits: int = 3) -> str:
    """``0.917 [0.62, 1.00]``: the mean with its 95% interval; ``n/a`` for no mean."""
    if value is None:
        return "n/a"
    band = bracket(iv)
    return f"{num(value, digits)} {band}" if band else num(value, digits)


def p_value(p: float | None) -> str:
    """``0.0312``, ``<0.0001``; ``n/a`` for none."""
    if p is None:
        return "n/a"
    return "<0.0001" if p < 1e-4 else f"{p:.4g}"
