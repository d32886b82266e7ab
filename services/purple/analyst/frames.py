"""Which stack frames belong to the project, and where their files live in the source tree.

Dropped: sanitizer runtime frames (compiler-rt, ``__asan_*``, interceptors, allocation and
``mem*``/``str*`` functions), libc/libstdc++/libc++ frames (``/usr/``, ``/lib``, ``libc.so``...),
the fuzzing harness (``LLVMFuzzerTestOneInput`` and every frame below it, ``fuzzer::``,
``/src/llvm-project``), and frames without a source file. What is left is project code.
"""

from __future__ import annotations

import re

from services.purple.analyst.sanitizer import Frame, Stack

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
    name = frame.function_name or ""
    if name in _HARNESS_FUNCTIONS or name.startswith("fuzzer::"):
        return True
    file = frame.file or ""
    return "/compiler-rt/lib/fuzzer/" in file or file.startswith("/src/libfuzzer/")


def project_frames(stack: Stack | None) -> list[Frame]:
    """The project frames of a stack, top first; the harness and everything below it is cut."""
    if stack is None:
        return []
    out = []
    for frame in stack.frames:
        if is_harness_boundary(frame):
            break
        if is_project_frame(frame):
            out.append(frame)
    return out


def is_project_frame(frame: Frame) -> bool:
    """A frame with a source file that is not the harness, the sanitizer runtime or the system."""
    return bool(frame.file) and not (
        is_harness_frame(frame) or is_runtime_frame(frame) or is_system_frame(frame)
    )


def is_harness_boundary(frame: Frame) -> bool:
    """The fuzz entry point: the crash stack's project part ends here."""
    return frame.function_name in _HARNESS_FUNCTIONS


def harness_frames(stack: Stack | None) -> list[Frame]:
    """The fuzz target's own frames (``LLVMFuzzerTestOneInput`` in project code): a last resort."""
    if stack is None:
        return []
    return [f for f in stack.frames if is_harness_boundary(f) and f.file and not is_system_frame(f)]


def split_src_path(path: str) -> tuple[str | None, str]:
    """``/src/<project>/a/b.c`` -> (project, ``a/b.c``); other paths -> (None, path)."""
    p = path.replace("\\", "/")
    if p.startswith("/src/"):
        parts = p[len("/src/") :].split("/", 1)
        if len(parts) == 2 and parts[1]:
            return parts[0], parts[1]
    return None, p.removeprefix("./")
