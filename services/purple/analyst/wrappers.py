"""Allocation and free wrappers, recognised from their bodies.

Projects route memory through their own helpers (``xfree``, ``png_free``, a destructor that
frees three fields, a hook set by the embedder). On a free or allocation stack those helpers
come first, but the decision to free (or to allocate that much) was made by the frame above
them. A function is a *wrapper* when its body is short and its calls mostly forward to the
allocator: ``free``/``malloc``/``realloc``..., a function already known to be a wrapper, or an
allocator hook (a callee whose name says it frees or allocates: ``free_fn(p)``,
``ctx->dealloc(p)``). The body is read through the environment; nothing is known by name alone.
"""

from __future__ import annotations

import re
import shlex

from services.purple.analyst.clex import KEYWORDS, clean, tokenize

_FREE_CALLS = {"free", "cfree", "realloc", "reallocf", "operator delete", "operator delete[]"}
_ALLOC_CALLS = {
    "malloc",
    "calloc",
    "realloc",
    "reallocarray",
    "strdup",
    "strndup",
    "memalign",
    "posix_memalign",
    "aligned_alloc",
}
_FREE_HOOK_RE = re.compile(r"free|dealloc|release|destroy|delete|unref|dispose", re.I)
_ALLOC_HOOK_RE = re.compile(r"alloc|new|dup|create", re.I)
_HELPERS = {"memcpy", "memset", "memmove", "strlen", "assert", "abort"}
"""Calls a wrapper may make besides the allocator (copying into the new block, poisoning)."""

MAX_BODY_LINES = 25
_TRIVIAL_RE = re.compile(r"^(?:else\s*)?return(?:\s+[\w>.-]*)?$")


def calls_in(body: str) -> list[str]:
    """The callees of a function body, in order (``a->b(x)`` gives ``b``)."""
    toks = tokenize(clean(body))
    out = []
    for i, t in enumerate(toks[:-1]):
        if t.kind == "id" and toks[i + 1].text == "(" and t.text not in KEYWORDS:
            out.append(t.text)
    return out


def is_wrapper(body: str, kind: str, known: set[str] | frozenset[str] = frozenset()) -> bool:
    """Whether a function body (the lines inside its braces) mostly forwards to the allocator:
    at least half of its statements (a bare ``return x;`` does not count) call the allocator,
    a known wrapper or a hook. ``kind`` is ``free`` or ``alloc``; ``known``: functions already
    recognised as wrappers."""
    text = clean(body)
    lines = [ln for ln in text.splitlines() if ln.strip() not in ("", "{", "}")]
    if not lines or len(lines) > MAX_BODY_LINES:
        return False
    base, hook = (_FREE_CALLS, _FREE_HOOK_RE) if kind == "free" else (_ALLOC_CALLS, _ALLOC_HOOK_RE)

    def forwards(stmt: str) -> bool:
        return any(
            c in base or c in known or bool(hook.search(c))
            for c in calls_in(stmt)
            if c not in _HELPERS
        )

    statements = [
        st.strip()
        for st in re.split(r";", re.sub(r"^\s*(?:if|while|for)\s*\(.*\)\s*$", "", text, flags=re.M))
        if st.strip().strip("{}").strip() and not _TRIVIAL_RE.match(st.strip().strip("{}").strip())
    ]
    forwarding = [st for st in statements if forwards(st)]
    return bool(forwarding) and 2 * len(forwarding) >= len(statements)


def awk_body(path_expr: str, start: int, end: int, max_lines: int = 60) -> str:
    """Shell printing ``N: text`` for the lines ``start..end`` (at most ``max_lines``)."""
    stop = min(end, start + max_lines)
    prog = f'NR>={start} && NR<={stop} {{print NR": "substr($0,1,200)}} NR>{stop} {{exit}}'
    return f"awk {shlex.quote(prog)} {path_expr}"
