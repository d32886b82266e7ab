"""The one report reader (services/shared/sanitizer/) on reports shaped like the real ones:
twelve real ARVO reports kept verbatim (data/arvo_reports/README.md: colour codes, CRLF,
``==7:7==``, ``..`` paths, UBSan, MSan origins, SCARINESS), and reports made in the same shape
for what those twelve lack (LeakSanitizer, libFuzzer's timeout and out-of-memory, OSC and cursor
escapes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.shared.sanitizer import has_report, parse_report, plain
from services.shared.sanitizer.frame_roles import crash_site, in_harness_file, project_frames

DATA = Path(__file__).parent / "data" / "arvo_reports"

RED, BLUE, GREEN, MAGENTA, OFF = (
    "\x1b[1m\x1b[31m",
    "\x1b[1m\x1b[34m",
    "\x1b[1m\x1b[32m",
    "\x1b[1m\x1b[35m",
    "\x1b[1m\x1b[0m",
)


def crlf(text: str) -> bytes:
    return text.replace("\n", "\r\n").encode()


def real(arvo_id: int) -> bytes:
    return (DATA / f"{arvo_id}.txt").read_bytes()


def test_the_kept_reports_are_coloured_and_crlf():
    for path in DATA.glob("*.txt"):
        raw = path.read_bytes()
        assert b"\r\n" in raw and b"\n" not in raw.replace(b"\r\n", b""), path.name
    assert sum(b"\x1b[" in p.read_bytes() for p in DATA.glob("*.txt")) >= 11


# id -> (sanitizer, bug class, project, stack kinds in order, crash site function, its file)
REAL = {
    368076871: (
        "AddressSanitizer",
        "SEGV",
        "mruby",
        ["crash"],
        "udiv",
        "/src/mruby/mrbgems/mruby-bigint/core/bigint.c",
    ),
    385773664: (
        "UndefinedBehaviorSanitizer",
        "object-size",
        "wamr",
        ["crash"],
        "load_from_sections",
        "/src/wamr/core/iwasm/interpreter/wasm_loader.c",
    ),
    395207096: (
        "MemorySanitizer",
        "use-of-uninitialized-value",
        "wavpack",
        ["crash", "stored", "origin"],
        "decimate_dsd_run",
        "/src/wavpack/src/unpack_dsd.c",
    ),
    421520684: (
        "AddressSanitizer",
        "stack-buffer-overflow",
        "opensc",
        ["crash", "stack_object"],
        "sc_single_transmit",
        "/src/opensc/src/libopensc/apdu.c",
    ),
    42475028: (
        "UndefinedBehaviorSanitizer",
        "index-out-of-bounds",
        "pcre2",
        ["crash"],
        "do_callout",
        "/src/pcre2/src/pcre2_match.c",
    ),
    42482472: (
        "MemorySanitizer",
        "use-of-uninitialized-value",
        "libxml2",
        ["crash", "origin"],
        "__xmlRaiseError",
        "/src/libxml2/error.c",
    ),
    42490592: (
        "AddressSanitizer",
        "stack-buffer-overflow",
        "openthread",
        ["crash", "stack_object"],
        "ot::Coap::Header::FromMessage(ot::Message const&, unsigned short)",
        "/src/openthread/src/core/coap/coap_header.cpp",
    ),
    42495936: (
        "libFuzzer",
        "deadly-signal",
        "wasm3",
        ["crash"],
        "Runtime_Release",
        "/src/wasm3/source/m3_env.c",
    ),
    42496381: (
        "AddressSanitizer",
        "stack-buffer-overflow",
        "openthread",
        ["crash", "stack_object"],
        "ot::MeshCoP::CommissionerSessionIdTlv::GetCommissionerSessionId() const",
        "/src/openthread/src/core/meshcop/meshcop_tlvs.hpp",
    ),
    42511244: (
        "AddressSanitizer",
        "bad-free",
        "opensc",
        ["crash", "allocated"],
        "change_pin",
        "/src/opensc/src/tools/pkcs15-tool.c",
    ),
    42515760: (
        "AddressSanitizer",
        "global-buffer-overflow",
        "h3",
        ["crash"],
        "_getBaseCellNeighbor",
        "/src/h3/src/h3lib/lib/baseCells.c",
    ),
    42535924: (
        "AddressSanitizer",
        "double-free",
        "libssh2",
        ["crash", "freed", "allocated"],
        "libssh2_default_free",
        "/src/libssh2/src/session.c",
    ),
}


@pytest.mark.parametrize("arvo_id", sorted(REAL))
def test_real_reports(arvo_id: int):
    sanitizer, bug_class, project, kinds, function, file = REAL[arvo_id]
    report = parse_report(real(arvo_id))
    assert (report.sanitizer, report.bug_class) == (sanitizer, bug_class)
    assert [s.kind for s in report.stacks] == kinds
    assert report.crash_stack.frames[0].index == 0  # a colour code before #0 loses nothing
    frames = [f for s in report.stacks for f in s.frames]
    assert all("\x1b" not in (f.function or "") + (f.file or "") + f.raw for f in frames)
    assert not any("/../" in (f.file or "") or "/./" in (f.file or "") for f in frames)
    site = crash_site(report.site_stack, project)
    assert (site.function, site.file) == (function, file)
    assert has_report(real(arvo_id)) is (sanitizer != "libFuzzer")


def test_the_summary_and_its_location_are_read_in_colour():
    report = parse_report(real(42511244))
    assert report.summary.startswith("SUMMARY: AddressSanitizer: bad-free")
    assert report.summary_location.function == "__interceptor_free"
    msan = parse_report(real(42482472))  # a WARNING: report that never printed a SUMMARY
    assert msan.summary is None and msan.bug_class == "use-of-uninitialized-value"


def test_ubsan_names_its_check_not_the_summarys_undefined_behavior():
    report = parse_report(real(385773664))
    assert report.summary.startswith("SUMMARY: UndefinedBehaviorSanitizer: undefined-behavior")
    assert report.ub_message.startswith("member access within address 0x001fffffffe0")
    assert report.ub_location.file == "/src/wamr/core/iwasm/interpreter/wasm_loader.c"
    assert (report.ub_location.line, report.ub_location.column) == (5844, 29)
    assert parse_report(real(42475028)).bug_class == "index-out-of-bounds"


def test_pid_and_thread_headers_and_dot_paths():
    report = parse_report(real(42496381))  # ==7:7==ERROR: ... /src/openthread/src/core/./meshcop
    assert report.error_line.startswith("==7:7==ERROR: AddressSanitizer: stack-buffer-overflow")
    assert report.summary_location.file == "/src/openthread/src/core/meshcop/meshcop_tlvs.hpp"
    assert report.fuzz_target == "ip6-send-fuzzer"


def test_frame_paths_through_a_build_folder_are_normalized():
    report = parse_report(real(42511244))  # /src/opensc/src/tests/fuzzing/../../../src/tools/
    top = project_frames(report.crash_stack)[0]
    assert top.file == "/src/opensc/src/tools/pkcs15-tool.c" and not in_harness_file(top)
    alloc = report.stack("allocated").frames
    assert [f.function for f in alloc[:2]] == ["__interceptor_strdup", "extract_word"]


def test_free_alloc_origin_and_stack_object_stacks():
    uaf = parse_report(real(42535924))
    assert [f.function_name for f in project_frames(uaf.stack("freed"))][:2] == [
        "libssh2_default_free",
        "diffie_hellman_sha_algo",
    ]
    assert project_frames(uaf.stack("allocated"))
    msan = parse_report(real(395207096))
    assert msan.stack("origin").header.startswith("Uninitialized value was created by")
    assert msan.stack("stored").header.startswith("Uninitialized value was stored to memory at")
    obj = parse_report(real(42490592))
    assert obj.stack("stack_object").header.startswith("Address 0x7ffff6e34cb9 is located in")
    glob = parse_report(real(42515760)).global_variable
    assert (glob.function, glob.file) == ("baseCellNeighbors", "/src/h3/src/h3lib/lib/baseCells.c")


def test_the_harness_is_answered_only_when_nothing_else_is_there():
    report = parse_report(real(421520684))  # #1 fuzz_reader_transmit in tests/fuzzing/
    frames = report.crash_stack.frames
    assert frames[1].function == "fuzz_reader_transmit" and in_harness_file(frames[1])
    assert crash_site(report.crash_stack, "opensc").function == "sc_single_transmit"
    assert "fuzz_reader_transmit" not in {f.function for f in project_frames(report.crash_stack)}
    mruby = parse_report(real(368076871))
    assert in_harness_file(mruby.crash_stack.frames[5])  # oss-fuzz/mruby_fuzzer.c
    only_harness = parse_report(
        crlf(
            "==3==ERROR: AddressSanitizer: SEGV on unknown address 0x000000000000\n"
            "    #0 0x51 in read_all /src/proj/fuzz/helpers.c:9:3\n"
            "    #1 0x52 in LLVMFuzzerTestOneInput /src/proj/fuzz/proj_fuzzer.c:20:5\n"
            "SUMMARY: AddressSanitizer: SEGV /src/proj/fuzz/helpers.c:9:3 in read_all\n"
        )
    )
    assert crash_site(only_harness.crash_stack, "proj").function == "read_all"
    in_a_fuzzy_project = parse_report(
        "==3==ERROR: AddressSanitizer: SEGV on unknown address 0x000000000000\n"
        "    #0 0x51 in fuzzy_hash /src/libfuzzy/src/hash.c:9:3\n"
    )  # the project's own folder name does not make it the harness
    assert not in_harness_file(in_a_fuzzy_project.crash_stack.frames[0])


LEAK = (
    "INFO: Seed: 1234\n/out/tree_fuzzer: Running 1 inputs 1 time(s) each.\nRunning: /tmp/poc\n"
    "\n=================================================================\n"
    f"{RED}==12:12==ERROR: LeakSanitizer: detected memory leaks\n{OFF}\n"
    f"{BLUE}Direct leak of 24 byte(s) in 1 object(s) allocated from:\n"
    f"{OFF}    #0 0x4a1b2d in malloc /src/llvm-project/compiler-rt/lib/asan/asan_malloc_linux.cpp:69:3\n"
    "    #1 0x4d2f11 in make_node /work/build/../../src/tinytree/src/node.c:41:17\n"
    "    #2 0x4d3001 in parse_tree /src/tinytree/src/parse.c:88:9\n"
    "    #3 0x4c9a10 in LLVMFuzzerTestOneInput /src/tinytree/fuzz/tree_fuzzer.c:12:5\n"
    "\nSUMMARY: AddressSanitizer: 24 byte(s) leaked in 1 allocation(s).\n"
)
TIMEOUT = (
    "ALARM: working on the last Unit for 25 seconds\n"
    "       and the timeout value is 25 (use -timeout=N to change)\n"
    "==7== ERROR: libFuzzer: timeout after 25 seconds\n"
    "    #0 0x52e2d1 in __sanitizer_print_stack_trace /src/llvm-project/compiler-rt/lib/asan/asan_stack.cpp:87:3\n"
    "    #1 0x47b0d8 in fuzzer::PrintStackTrace() /src/llvm-project/compiler-rt/lib/fuzzer/FuzzerUtil.cpp:210:5\n"
    "    #2 0x45fb73 in fuzzer::Fuzzer::AlarmCallback() /src/llvm-project/compiler-rt/lib/fuzzer/FuzzerLoop.cpp:301:5\n"
    "    #3 0x7f0d1bd7c41f  (/lib/x86_64-linux-gnu/libpthread.so.0+0x1441f)\n"
    "    #4 0x55a1c3 in skip_spaces /src/tinytree/src/lex.c:20:12\n"
    "    #5 0x55a7f0 in next_token /src/tinytree/src/lex.c:57:5\n"
    "    #6 0x55b0c1 in LLVMFuzzerTestOneInput /src/tinytree/fuzz/tree_fuzzer.c:14:3\n"
    "\nSUMMARY: libFuzzer: timeout\n"
)
OOM = (
    "==7== ERROR: libFuzzer: out-of-memory (malloc(4294967296))\n"
    "To change the out-of-memory limit use -rss_limit_mb=<N>\n\n"
    "    #0 0x52e2d1 in __sanitizer_print_stack_trace /src/llvm-project/compiler-rt/lib/asan/asan_stack.cpp:87:3\n"
    "    #1 0x47b0d8 in fuzzer::PrintStackTrace() /src/llvm-project/compiler-rt/lib/fuzzer/FuzzerUtil.cpp:210:5\n"
    "    #2 0x45f6a6 in fuzzer::Fuzzer::HandleMalloc(unsigned long) /src/llvm-project/compiler-rt/lib/fuzzer/FuzzerLoop.cpp:131:3\n"
    "    #3 0x45f5bb in fuzzer::MallocHook(void const volatile*, unsigned long) /src/llvm-project/compiler-rt/lib/fuzzer/FuzzerLoop.cpp:100:6\n"
    "    #4 0x5343d7 in __sanitizer::RunMallocHooks(void*, unsigned long) /src/llvm-project/compiler-rt/lib/sanitizer_common/sanitizer_common.cpp:345:5\n"
    "    #5 0x4f01a5 in malloc /src/llvm-project/compiler-rt/lib/asan/asan_malloc_linux.cpp:69:3\n"
    "    #6 0x55a2c0 in grow_buffer /src/tinytree/src/buf.c:33:14\n"
    "    #7 0x55b0c1 in LLVMFuzzerTestOneInput /src/tinytree/fuzz/tree_fuzzer.c:14:3\n"
    "\nSUMMARY: libFuzzer: out-of-memory\n"
)


def test_leak_sanitizer_in_colour():
    report = parse_report(crlf(LEAK))
    assert (report.sanitizer, report.bug_class) == ("LeakSanitizer", "memory-leak")
    assert report.error_line == "==12:12==ERROR: LeakSanitizer: detected memory leaks"
    assert [s.kind for s in report.stacks] == ["leak"] and report.crash_stack is None
    site = crash_site(report.site_stack, "tinytree")
    assert (site.function, site.file, site.line) == ("make_node", "/src/tinytree/src/node.c", 41)
    assert report.fuzz_target == "tree_fuzzer" and has_report(crlf(LEAK))


@pytest.mark.parametrize(
    ("text", "bug_class", "first"),
    [(TIMEOUT, "timeout", "skip_spaces"), (OOM, "out-of-memory", "grow_buffer")],
)
def test_libfuzzer_timeout_and_out_of_memory(text: str, bug_class: str, first: str):
    report = parse_report(crlf(text))
    assert (report.sanitizer, report.bug_class) == ("libFuzzer", bug_class)
    assert [f.function_name for f in project_frames(report.crash_stack)] == [
        first,
        *(["next_token"] if bug_class == "timeout" else []),
    ]
    assert crash_site(report.crash_stack, "tinytree").function == first
    assert not has_report(text)  # a hang or a memory limit is no sanitizer's crash


def test_every_terminal_escape_and_cr_goes():
    line = (
        "\x1b]0;arvo\x07\x1b]8;;file:///src/p/a.c\x1b\\#0\x1b]8;;\x1b\\ 0x55 in f "
        "\x1b[2K\x1b[?25l/src/p/a.c:3:1\x1b(B\x1b[m\r\n"
    )
    assert plain(line) == "#0 0x55 in f /src/p/a.c:3:1\n"
    assert plain(b"a\rb\r\nc\xff") == "a\nb\nc\ufffd"
    report = parse_report("==1==ERROR: AddressSanitizer: SEGV on unknown address\n" + line)
    top = report.crash_stack.frames[0]
    assert (top.function, top.file, top.line) == ("f", "/src/p/a.c", 3)


@pytest.mark.parametrize(
    ("message", "bug_class"),
    [
        (
            "signed integer overflow: 2147483647 + 1 cannot be represented in type 'int'",
            "signed-integer-overflow",
        ),
        (
            "unsigned integer overflow: 0 - 1 cannot be represented in type 'unsigned int'",
            "unsigned-integer-overflow",
        ),
        ("negation of -2147483648 cannot be represented in type 'int'", "signed-integer-overflow"),
        ("left shift of 1 by 31 places cannot be represented in type 'int'", "shift-base"),
        ("shift exponent 40 is too large for 32-bit type 'int'", "shift-exponent"),
        ("index 5 out of bounds for type 'int [4]'", "index-out-of-bounds"),
        ("load of null pointer of type 'int'", "null-pointer-use"),
        ("member access within null pointer of type 'struct s'", "null-pointer-use"),
        (
            "null pointer passed as argument 2, which is declared to never be null",
            "nonnull-attribute",
        ),
        ("applying non-zero offset 8 to null pointer", "pointer-overflow"),
        ("addition of unsigned offset to 0x602 overflowed to 0x601", "pointer-overflow"),
        (
            "load of misaligned address 0x602 for type 'int', which requires 4 byte alignment",
            "misaligned-pointer-use",
        ),
        ("load of value 3, which is not a valid value for type 'bool'", "invalid-value-load"),
        ("division by zero", "integer-divide-by-zero"),
        ("downcast of address 0x60 which does not point to an object of type 'B'", "bad-cast"),
        ("something new", "undefined-behavior"),
    ],
)
def test_ubsan_checks_name_their_class(message: str, bug_class: str):
    text = (
        f"\x1b[1m/src/p/a.c:3:9:{RED} runtime error: {OFF}\x1b[1m{message}{OFF}\r\n"
        "SUMMARY: UndefinedBehaviorSanitizer: undefined-behavior /src/p/a.c:3:9 in\r\n"
    )
    report = parse_report(text)
    assert (report.sanitizer, report.bug_class, report.ub_message) == (
        "UndefinedBehaviorSanitizer",
        bug_class,
        message,
    )


def test_scariness_and_section_colours_do_not_split_stacks():
    text = (
        f"{RED}==9==ERROR: AddressSanitizer: heap-use-after-free on address 0x60 at pc 0x1\n"
        f"{OFF}{BLUE}READ of size 4 at 0x60 thread T0{OFF}\nSCARINESS: 45 (4-byte-read-heap-use-after-free)\n"
        f"{OFF}    #0 0x1 in use /src/p/a.c:9:3\n    #1 0x2 in run /src/p/b.c:4:1\n\n"
        f"{GREEN}0x60 is located 0 bytes inside of 8-byte region [0x60,0x68)\n{OFF}"
        f"{MAGENTA}freed by thread T0 here:{OFF}\n    #0 0x3 in free /src/llvm-project/x.cpp:1:1\n"
        "    #1 0x4 in drop /src/p/c.c:7:2\n\n"
        f"{MAGENTA}previously allocated by thread T0 here:{OFF}\n    #0 0x5 in malloc /src/llvm-project/x.cpp:2:1\n"
        "    #1 0x6 in make /src/p/c.c:3:2\n\n"
        f"SUMMARY: AddressSanitizer: heap-use-after-free /src/p/a.c:9:3 in use\n"
    )
    report = parse_report(crlf(text))
    assert [(s.kind, len(s.frames)) for s in report.stacks] == [
        ("crash", 2),
        ("freed", 2),
        ("allocated", 2),
    ]
    assert (report.access, report.access_size) == ("READ", 4)
    assert report.region == "0 bytes inside of 8-byte region"
