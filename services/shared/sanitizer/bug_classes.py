"""A report's bug class, in the words the sanitizers use: ``heap-buffer-overflow``, ``SEGV``,
``use-of-uninitialized-value``, ``memory-leak``, ``timeout``...

ASan's and MSan's error line names the class; where it only describes it (``attempting
double-free``, ``requested allocation size ... exceeds``) the SUMMARY line's word wins. UBSan's
SUMMARY says only ``undefined-behavior``: the check that fired (the ``runtime error:`` text) names
the class, after the check's name in clang (``-fsanitize=...``) where it has one.
"""

from __future__ import annotations

import re

UNDEFINED_BEHAVIOR = "undefined-behavior"
"""A UBSan report whose check this table does not know."""

_UB_CHECKS: tuple[tuple[str, str], ...] = (
    # order matters: the first needle found in the runtime error text names the class
    ("null pointer passed as argument", "nonnull-attribute"),
    ("null pointer returned from function", "nonnull-return"),
    ("returns a nonnull", "nonnull-return"),
    ("applying zero offset to null pointer", "pointer-overflow"),
    ("applying non-zero offset", "pointer-overflow"),
    ("pointer overflow", "pointer-overflow"),
    ("unsigned offset", "pointer-overflow"),  # "addition of unsigned offset to 0x.. overflowed"
    ("null pointer", "null-pointer-use"),  # load of / store to / member access within null ...
    ("misaligned address", "misaligned-pointer-use"),
    ("insufficient space for an object", "object-size"),
    ("does not point to an object of type", "bad-cast"),  # -fsanitize=vptr (downcast, member)
    ("unsigned integer overflow", "unsigned-integer-overflow"),
    ("signed integer overflow", "signed-integer-overflow"),
    ("shift exponent", "shift-exponent"),
    ("left shift of", "shift-base"),
    ("division by zero", "integer-divide-by-zero"),
    ("outside the range of representable values", "float-cast-overflow"),
    ("implicit conversion", "implicit-conversion"),
    ("cannot be represented in type", "signed-integer-overflow"),  # negation, INT_MIN / -1
    ("out of bounds for type", "index-out-of-bounds"),
    ("is not a valid value for type", "invalid-value-load"),  # bool, enum
    ("indirect function call through", "function-type-mismatch"),
    ("through pointer to incorrect function type", "function-type-mismatch"),
    ("execution reached an unreachable program point", "unreachable"),
    ("reached the end of a value-returning function", "missing-return"),
    ("variable length array bound", "vla-bound-not-positive"),
    ("passing zero to", "invalid-builtin-use"),  # __builtin_ctz/clz(0)
)

_SUMMARY_WORD = re.compile(r"[a-z]+(?:-[a-z_]+)+|SEGV|[A-Z]{3,4}")


def ub_class(message: str) -> str:
    """The bug class of UBSan's ``runtime error:`` text (what follows it)."""
    for needle, name in _UB_CHECKS:
        if needle in message:
            return name
    return UNDEFINED_BEHAVIOR


def error_class(sanitizer: str, rest: str) -> str | None:
    """The bug class of an error line ``==7==ERROR: <sanitizer>: <rest>``."""
    rest = rest.strip()
    if sanitizer == "libFuzzer":  # deadly signal, timeout after 25 seconds, out-of-memory (...)
        kind = rest.split("(")[0].split(" after ")[0].strip()
        return kind.replace(" ", "-") or None
    if sanitizer == "LeakSanitizer" or rest.startswith("detected memory leaks"):
        return "memory-leak"
    if rest.startswith("attempting double-free"):
        return "double-free"
    if rest.startswith("attempting free on address which was not malloc"):
        return "bad-free"
    return rest.split(" ")[0].rstrip(":") if rest else None


def summary_class(sanitizer: str, rest: str) -> str | None:
    """The SUMMARY line's class when it names one better than an error line can (ASan's
    ``allocation-size-too-big`` for ``requested allocation size ...``); None for UBSan's
    ``undefined-behavior``, libFuzzer's words and leak sizes."""
    if sanitizer in ("UndefinedBehaviorSanitizer", "libFuzzer"):
        return None
    first = rest.strip().split(" ")[0].rstrip(":")
    return first if _SUMMARY_WORD.fullmatch(first) else None
