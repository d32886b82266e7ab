"""What a fix may not add: code that changes how the sanitizer or the process runs.

A fix is judged by running its build: the PoC must run clean under the sanitizer. Code that turns
the sanitizer off (an attribute, a pragma, an interface function or weak hook the runtime calls),
runs before or after the fuzz target (a constructor, a destructor, an ``.init_array`` entry) or
leaves the process early and clean (``_exit``) would make a build pass without fixing anything,
so an added line that holds one is refused with a sentence naming the construct, the file and
the line, unless the developers' fix (``patch.diff``) adds the same construct (it needs it).

The check reads the added lines of green's own diff (:mod:`.tree_diff`); comments are read too
(a comment that names a construct is refused: rare, and cheap to reword). What a macro would
assemble from harmless pieces is refused by its means (token pasting, ``_Pragma``); the built
binary is checked as well (:mod:`.binary`), so a construct the text check misses still shows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from unidiff import PatchSet
from unidiff.errors import UnidiffParseError


@dataclass(frozen=True)
class Construct:
    name: str
    """How the refusal names it."""
    what: str
    """What it does, in words."""
    pattern: re.Pattern[str]


def _c(name: str, what: str, pattern: str) -> Construct:
    return Construct(name, what, re.compile(pattern))


CONSTRUCTS = (
    _c("a sanitizer interface name (__asan_*, __sanitizer_*, ...)",
       "the sanitizer runtime's own functions and hooks (options, error callbacks)",
       r"\b__(?:asan|lsan|msan|ubsan|tsan|hwasan|dfsan|sanitizer)_\w*"),
    _c("a *_default_options or *_default_suppressions function",
       "it sets the sanitizer's options from inside the program",
       r"\w*_default_(?:options|suppressions)\b"),
    _c("a no_sanitize attribute", "it turns the sanitizer off in a function",
       r"\b(?:no_sanitize\w*|__no_sanitize\w*|disable_sanitizer_instrumentation|"
       r"no_address_safety_analysis)\b"),
    _c("a constructor or destructor attribute",
       "it runs code before or after the fuzz target", r"\b(?:constructor|destructor)\s*(?:\(|\))"),
    _c("a section attribute (.init_array, ...)",
       "it places code or data where the loader or the runtime runs it",
       r"\b(?:__)?section(?:__)?\s*\(\s*\"|\.(?:pre)?init_array\b|\.fini_array\b|\.ctors\b|\.dtors\b"),
    _c("a weak symbol", "it overrides a hook the runtime looks up",
       r"\bweak\b|\balias\s*\("),
    _c("a #pragma or _Pragma", "it changes how code is compiled (instrumentation, optimisation)",
       r"^\s*#\s*pragma\b|\b_Pragma\b|__pragma\b"),
    _c("an optimisation attribute", "it changes how a function is compiled",
       r"\b(?:optnone|optimize\s*\(|target\s*\(\")"),
    _c("token pasting (##)", "it assembles names the check would refuse", r"##"),
    _c("inline assembly", "memory it touches is not instrumented",
       r"\b(?:asm|__asm__|__asm)\b"),
    _c("an exit of the process (_exit, quick_exit, a signal)",
       "it ends the run before the sanitizer reports, or hides a crash",
       r"\b(?:_exit|_Exit|quick_exit|exit_group|abort_handler_s|syscall|kill|raise|signal|"
       r"sigaction|setjmp|longjmp|sigsetjmp|siglongjmp|prctl|ptrace)\s*\("),
    _c("a process or loader call (fork, exec*, system, dlopen, setenv, ...)",
       "it changes the process or its environment from inside",
       r"\b(?:fork|vfork|clone|execl|execlp|execle|execv|execve|execvp|execvpe|fexecve|system|"
       r"popen|posix_spawn\w*|dlopen|dlsym|dlmopen|setenv|putenv|unsetenv|clearenv)\s*\("),
    _c("a fuzzer entry point (LLVMFuzzer*)", "it changes what the fuzz target runs",
       r"\bLLVMFuzzer\w*"),
)  # fmt: skip


@dataclass(frozen=True)
class Found:
    construct: Construct
    path: str
    line: int | None
    text: str


def added_lines(patch: str) -> list[tuple[str, int | None, str]]:
    """``(path, line, text)`` of every added line of a unified diff (a diff that does not
    parse: its ``+`` lines, without places)."""
    try:
        files = PatchSet(patch)
    except (UnidiffParseError, UnicodeError, ValueError):
        return [("", None, ln[1:]) for ln in patch.splitlines() if ln.startswith("+")
                and not ln.startswith("+++")]  # fmt: skip
    return [
        (pf.path, line.target_line_no, line.value.rstrip("\n"))
        for pf in files
        for hunk in pf
        for line in hunk
        if line.is_added
    ]


def found_in(lines: list[tuple[str, int | None, str]]) -> list[Found]:
    return [
        Found(c, path, no, text)
        for path, no, text in lines
        for c in CONSTRUCTS
        if c.pattern.search(text)
    ]


def refused_constructs(patch: str, fix_patch: str | None) -> list[str]:
    """A sentence per construct ``patch`` adds that the developers' fix (``fix_patch``) does
    not (empty: none)."""
    needed = {f.construct.name for f in found_in(added_lines(fix_patch or ""))}
    out: dict[str, str] = {}
    for f in found_in(added_lines(patch)):
        if f.construct.name in needed or f.construct.name in out:
            continue
        where = f"{f.path}:{f.line}" if f.line else f.path or "an added line"
        out[f.construct.name] = (
            f"the patch adds {f.construct.name} at {where} ({f.text.strip()[:120]!r}): "
            f"{f.construct.what}. A fix changes what the code does, never how the sanitizer "
            "or the process runs; remove it and submit again"
        )
    return list(out.values())
