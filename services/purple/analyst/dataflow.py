"""Backward dataflow of an out-of-bounds index, length or pointer along the crash stack.

For a spatial memory error (buffer overflow, UBSan index-out-of-bounds) the crash line shows
*where* memory was accessed, not where the bad value came from. When the index of ``arr[idx]``
(the length of a ``memcpy``, the offset in ``*(p + n)``) is a parameter of the crashing
function, the function merely trusted its caller. This module follows such a value frame by
frame up the stack:

1. at the crash line, find the access expression(s) (the report's column picks one when there
   are several) and the variables of the index/length, or of the pointer when the index is a
   constant;
2. when all of them are parameters the function never reassigns, find the call to the callee on
   the caller frame's line, take the argument at each parameter's position and its variables;
3. repeat until a frame computes the value itself (a local variable, a constant, a struct
   member, a call result): that frame is the *origin*.

The trail goes cold - no origin - when the value is still an untouched parameter of the last
readable project frame (it is the fuzzer's input, passed through unchanged) or when a line
cannot be parsed (macros, calls through unusual syntax). Then the ranking stays as it was.

This is a lexical C heuristic on a few lines of source per frame: no preprocessor, no types. It
is deliberately conservative: any doubt stops the trail.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from services.purple.analyst.caccess import (
    Access,
    Value,
    access_sites,
    assignments,
    call_arguments,
    expr_value,
    memory_call_site,
    select_sites,
)
from services.purple.analyst.clex import clean, text_of

# ---- the trail ---------------------------------------------------------------------------------


@dataclass
class FrameCode:
    """What was read of one crash-stack frame."""

    function: str
    file: str
    line: int
    column: int | None
    params: list[str | None] | None
    """None when the signature could not be read."""
    statement: str
    """The frame's line, with the continuation lines after it."""
    body_before: str = ""
    """Body lines before ``line`` that may assign something (for the explanations)."""
    body: str = ""
    """All body lines read (for reassignments of parameters)."""
    checks: list[tuple[int, str]] = field(default_factory=list)
    """``(line, text)`` of the ``if``/``while``/``for`` lines before ``line``."""


@dataclass
class Step:
    frame: int
    function: str
    values: list[str]
    """The variables followed at this frame."""
    note: str


@dataclass
class Trail:
    origin: int | None = None
    """Index of the frame that computes the value; None when the trail went cold."""
    steps: list[Step] = field(default_factory=list)
    access: str = ""
    """The access expression at the crash line."""
    why: str = ""
    """One sentence for loc.json."""
    frames: list[FrameCode] = field(default_factory=list)
    """The frames' code the trail was followed through."""

    @property
    def moved(self) -> bool:
        return bool(self.origin)


def _q(names: set[str] | list[str]) -> str:
    return ", ".join(sorted(names))


def crash_value(frame: FrameCode, memory_fn: str | None, access: str | None) -> Access | None:
    if memory_fn:
        return memory_call_site(frame.statement, memory_fn, access)
    first_line = frame.statement.split("\n", 1)[0]
    sites = select_sites(access_sites(frame.statement), clean(first_line), frame.column)
    if not sites:
        return None
    value = Value()
    for s in sites:
        value = value.merge(s.value)
    return Access(sites[0].kind, 0, 0, " / ".join(s.text for s in sites), value)


def follow(
    frames: list[FrameCode],
    *,
    memory_fn: str | None = None,
    access: str | None = None,
    more_frames: bool = False,
) -> Trail:
    """Follow the bad value from ``frames[0]`` (the crash) up through its callers.
    ``more_frames``: project frames exist beyond the last one given (not read)."""
    trail = Trail(frames=list(frames))
    if not frames:
        return trail
    site = crash_value(frames[0], memory_fn, access)
    if site is None:
        trail.why = f"no array, pointer or memory-function access found on the crash line of {frames[0].function}"
        return trail
    trail.access, value, k, path = site.text, site.value, 0, []
    what = "length/offset" if memory_fn else "index" if site.kind == "subscript" else "pointer"
    while True:
        fr = frames[k]
        names = set(value.vars)
        if value.computed or value.constant or fr.params is None:
            origin_note = _origin_note(fr, value)
            if fr.params is None and not value.computed and not value.constant:
                trail.steps.append(Step(k, fr.function, sorted(names), "signature not read"))
                trail.why = _cold(trail, path, f"the signature of {fr.function} could not be read")
                return trail
            trail.steps.append(Step(k, fr.function, sorted(names), origin_note))
            trail.origin = k
            break
        params = {p for p in fr.params if p}
        local = names - params
        if local:
            trail.steps.append(
                Step(k, fr.function, sorted(names), _local_note(fr, local, params & names))
            )
            trail.origin = k
            break
        changed = {n: a for n in names if (a := assignments(fr.body, n))}
        if changed:
            n, lines = next(iter(sorted(changed.items())))
            note = f"{n} is a parameter of {fr.function} but is changed there (`{lines[0]}`)"
            trail.steps.append(Step(k, fr.function, sorted(names), note))
            trail.origin = k
            break
        if k + 1 >= len(frames):
            trail.steps.append(Step(k, fr.function, sorted(names), "parameter of the last frame"))
            where = (
                "a caller that was not read"
                if more_frames
                else "the fuzz target (the input, passed through unchanged)"
            )
            trail.why = _cold(trail, path, f"{_q(names)} of {fr.function} comes from {where}")
            return trail
        caller = frames[k + 1]
        args = call_arguments(caller.statement, fr.function, caller.column)
        positions = {n: fr.params.index(n) for n in names}
        if args is None or any(p >= len(args) for p in positions.values()):
            trail.steps.append(Step(k, fr.function, sorted(names), "call not parsed"))
            trail.why = _cold(
                trail,
                path,
                f"the call to {fr.function} on line {caller.line} of {caller.file} could not be parsed",
            )
            return trail
        passed = {n: text_of(args[p]) for n, p in sorted(positions.items())}
        trail.steps.append(Step(k, fr.function, sorted(names), "parameter"))
        path.append(
            f"{_q(names)} {'is a parameter' if len(names) == 1 else 'are parameters'} of "
            f"{fr.function}; {caller.function} passes "
            + ", ".join(f"`{a}`" for a in passed.values())
        )
        value = Value()
        for p in positions.values():
            value = value.merge(expr_value(args[p]))
        k += 1
    trail.why = _explain(trail, frames, path, what)
    return trail


def _explain(trail: Trail, frames: list[FrameCode], path: list[str], what: str) -> str:
    """The sentence for a trail that found its origin."""
    last = trail.steps[-1].note
    if not trail.origin:
        return f"The {what} of `{trail.access}` is computed in {frames[0].function}: {last}."
    origin = frames[trail.origin]
    return (
        f"The {what} of `{trail.access}` in {frames[0].function} comes from up the stack: "
        f"{'; '.join(path)}; {last}. The out-of-range value is produced in "
        f"{origin.function} ({origin.file}:{origin.line}), which should have checked it."
    )


def _cold(trail: Trail, path: list[str], end: str) -> str:
    steps = "; ".join(path)
    return (
        f"The value at `{trail.access}` was followed up the stack"
        + (f" ({steps})" if steps else "")
        + f", but {end}; the crash site stays first."
    )


def _origin_note(fr: FrameCode, value: Value) -> str:
    if value.constant:
        return f"{fr.function} passes a constant"
    parts = ", ".join(dict.fromkeys(value.computed))
    return f"{fr.function} computes it ({parts})"


def _local_note(fr: FrameCode, local: set[str], params: set[str]) -> str:
    bits = []
    for n in sorted(local):
        found = assignments(fr.body_before, n)
        bits.append(
            f"{n} is local to {fr.function}" + (f" (last set by `{found[-1]}`)" if found else "")
        )
    if params:
        bits.append(f"combined with parameter(s) {_q(params)}")
    return "; ".join(bits)


def guard_line(frame: FrameCode, names: list[str] | set[str], reach: int = 20) -> int | None:
    """The nearest ``if``/``while``/``for`` at most ``reach`` lines above the frame's line that
    reads one of ``names``: the existing check of the bad value (a fix often changes it, or
    adds one right after it). None when there is none."""
    words = [re.escape(n) for n in names if n]
    if not words:
        return None
    pattern = re.compile(rf"(?<![\w.>])(?:{'|'.join(words)})\b")
    for n, text in reversed(frame.checks):
        if frame.line - n > reach:
            break
        if pattern.search(clean(text)):
            return n
    return None
