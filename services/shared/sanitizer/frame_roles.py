"""Which frames of a stack are the project's: not the sanitizer runtime, not the system, not
the fuzzing harness.

Runtime frames: compiler-rt, ``__asan_*`` and the like, interceptors, allocation and
``mem*``/``str*`` functions. System frames: libc/libstdc++/libc++ (``/usr/``, ``/lib``,
``libc.so``...), ``/src/llvm-project``. The harness: libFuzzer's driver (``fuzzer::``, its
sources), the entry points (``LLVMFuzzerTestOneInput``: the project part of a crash stack ends
there), and the fuzz target's own files (a ``fuzz``/``fuzzer``/``fuzzing`` folder of the project,
a file named ``*fuzz*``), which rank below every other project frame: the bug is in the code the
harness drives, unless no other project frame is on the stack.
"""

from __future__ import annotations

import re

from services.shared.sanitizer.frames import Frame, Stack, split_src_path

RUNTIME_FUNCTIONS = {
    "malloc",
    "free",
    "calloc",
    "realloc",
    "reallocarray",
    "reallocf",
    "memalign",
    "posix_memalign",
    "aligned_alloc",
    "valloc",
    "pvalloc",
    "cfree",
    "strdup",
    "strndup",
    "operator new",
    "operator new[]",
    "operator delete",
    "operator delete[]",
    "memcpy",
    "memmove",
    "memset",
    "memcmp",
    "bcmp",
    "memchr",
    "memrchr",
    "memmem",
    "strlen",
    "strnlen",
    "strcpy",
    "strncpy",
    "strcat",
    "strncat",
    "strcmp",
    "strncmp",
    "strcasecmp",
    "strncasecmp",
    "strchr",
    "strrchr",
    "strstr",
    "strcasestr",
    "strspn",
    "strcspn",
    "strpbrk",
    "strtok",
    "strtol",
    "strtoul",
    "strtoll",
    "strtoull",
    "strtod",
    "atoi",
    "atol",
    "wcslen",
    "wcscpy",
    "wmemcpy",
    "sprintf",
    "snprintf",
    "vsprintf",
    "vsnprintf",
    "printf",
    "fprintf",
    "vfprintf",
    "sscanf",
    "vsscanf",
    "fread",
    "fwrite",
    "fgets",
    "fputs",
    "puts",
    "read",
    "write",
    "pread",
    "readv",
    "abort",
    "raise",
    "__memcpy_chk",
    "__memmove_chk",
    "__memset_chk",
    "__strcpy_chk",
    "__sprintf_chk",
    "__snprintf_chk",
    "__assert_fail",
    "__cxa_throw",
    "__cxa_allocate_exception",
}
_RUNTIME_PREFIXES = (
    "__asan",
    "__msan",
    "__ubsan",
    "__lsan",
    "__tsan",
    "__hwasan",
    "__sanitizer",
    "__interceptor",
    "___interceptor",
    "__interception",
    "__sanitizer_cov",
    "__dfsan",
    "__libc_",
    "__GI_",
    "_IO_",
)
_SYSTEM_PATHS = ("/usr/", "/lib/", "/lib64/", "/build/glibc", "/src/llvm-project/", "/rustc/")
_SYSTEM_FILE_PARTS = (
    "/compiler-rt/",
    "/libsanitizer/",
    "/libcxx/",
    "/libcxxabi/",
    "/sysdeps/",
    "/glibc-",
    "../csu/",
    "/libgcc/",
    "/libstdc++-v3/",
)
_SYSTEM_MODULE_RE = re.compile(
    r"(^|/)(libc|libm|libdl|libpthread|librt|ld-linux[\w.-]*|"
    r"libstdc\+\+|libc\+\+|libc\+\+abi|libgcc_s)(\.so|-[\d.]+\.so)"
)
_HARNESS_FUNCTIONS = ("LLVMFuzzerTestOneInput", "LLVMFuzzerInitialize", "LLVMFuzzerCustomMutator")
_HARNESS_DIRS = frozenset({"fuzz", "fuzzer", "fuzzers", "fuzzing", "oss-fuzz"})


def is_runtime_frame(frame: Frame) -> bool:
    name = frame.function_name or ""
    if name in RUNTIME_FUNCTIONS or name.startswith(_RUNTIME_PREFIXES):
        return True
    return any(
        ns in name
        for ns in (
            "__sanitizer::",
            "__asan::",
            "__msan::",
            "__ubsan::",
            "__lsan::",
            "__interception::",
        )
    )


def is_system_frame(frame: Frame) -> bool:
    if frame.file and (
        frame.file.startswith(_SYSTEM_PATHS) or any(p in frame.file for p in _SYSTEM_FILE_PARTS)
    ):
        return True
    if frame.module and _SYSTEM_MODULE_RE.search(frame.module):
        return True
    name = frame.function_name or ""
    return name.startswith(("std::", "__gnu_cxx::", "__cxxabiv1::")) and not frame.file


def is_harness_frame(frame: Frame) -> bool:
    """libFuzzer's own frames and the fuzz entry points."""
    name = frame.function_name or ""
    if name in _HARNESS_FUNCTIONS or name.startswith("fuzzer::"):
        return True
    file = frame.file or ""
    return "/compiler-rt/lib/fuzzer/" in file or file.startswith("/src/libfuzzer/")


def in_harness_file(frame: Frame) -> bool:
    """A frame of the fuzz target's own code: an entry point, or a file in a ``fuzz``,
    ``fuzzer``, ``fuzzing`` (...) folder of the project or named ``*fuzz*``. The project's own
    folder name is not looked at (a project may be called ``fuzzy``)."""
    return is_harness_frame(frame) or (frame.file is not None and in_harness_path(frame.file))


def in_harness_path(path: str) -> bool:
    """A file of the fuzz target: in a ``fuzz``, ``fuzzer``, ``fuzzing`` (...) folder of the
    project (``/src/<project>/`` is not looked at) or named ``*fuzz*``."""
    _, rel = split_src_path(path)
    *dirs, name = rel.lower().split("/")
    return "fuzz" in name or any(d in _HARNESS_DIRS for d in dirs)


def is_harness_boundary(frame: Frame) -> bool:
    """The fuzz entry point: the crash stack's project part ends here."""
    return frame.function_name in _HARNESS_FUNCTIONS


def is_project_frame(frame: Frame) -> bool:
    """A frame with a source file that is not the harness, the sanitizer runtime or the system."""
    return bool(frame.file) and not (
        is_harness_frame(frame) or is_runtime_frame(frame) or is_system_frame(frame)
    )


def project_frames(stack: Stack | None) -> list[Frame]:
    """The project frames of a stack, top first; the harness and everything below it is cut,
    and the fuzz target's files are left out when any other project frame is there."""
    out: list[Frame] = []
    for frame in stack.frames if stack else []:
        if is_harness_boundary(frame):
            break
        if is_project_frame(frame):
            out.append(frame)
    driven = [f for f in out if not in_harness_file(f)]
    return driven or out


def harness_frames(stack: Stack | None) -> list[Frame]:
    """The fuzz target's own frames (``LLVMFuzzerTestOneInput`` in project code): a last resort."""
    frames = stack.frames if stack else []
    return [f for f in frames if is_harness_boundary(f) and f.file and not is_system_frame(f)]


def crash_site(stack: Stack | None, project: str | None) -> Frame | None:
    """The top frame of a stack in ``/src/<project>/`` (any ``/src/`` folder without a project)
    that is neither runtime nor system code: the first one outside the fuzz target's files,
    else the first one at all (the bug is in the harness itself); None when there is none."""
    prefix = f"/src/{project}/" if project else "/src/"
    ours = [
        f
        for f in (stack.frames if stack else [])
        if (f.file or "").startswith(prefix) and not (is_system_frame(f) or is_runtime_frame(f))
    ]
    return next((f for f in ours if not in_harness_file(f)), ours[0] if ours else None)
