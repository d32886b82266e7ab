"""Sanitizer report parsing and frame filtering (services/purple/analyst/)."""

from pathlib import Path

import pytest

from services.shared.sanitizer import parse_frame, parse_report
from services.shared.sanitizer.frame_roles import project_frames
from services.shared.sanitizer.frames import short_function_name, split_src_path
from tests.purple import sample_reports as R

DATA = Path(__file__).parent / "data" / "reports"


def names(frames) -> list[str | None]:
    return [f.function_name for f in frames]


def test_asan_heap_buffer_overflow_with_alloc_stack() -> None:
    rep = parse_report(R.ASAN_HEAP_OVERFLOW)
    assert (rep.sanitizer, rep.crash_type) == ("AddressSanitizer", "heap-buffer-overflow")
    assert (rep.access, rep.access_size, rep.address) == ("READ", 4, "0x7486d9f71878")
    assert rep.region == "0 bytes after 24-byte region"
    assert [s.kind for s in rep.stacks] == ["crash", "allocated"]
    top = rep.crash_stack.frames[0]
    assert (top.index, top.function, top.file, top.line, top.column) == (
        0,
        "wrap_lines_measure",
        "/src/libass/libass/ass_render.c",
        1902,
        50,
    )
    assert len(rep.crash_stack.frames) == 10
    assert names(project_frames(rep.crash_stack)) == [
        "wrap_lines_measure",
        "wrap_lines_smart",
        "ass_render_event",
        "ass_render_frame",
    ]
    assert names(project_frames(rep.stack("allocated"))) == ["ass_shaper_new", "ass_renderer_init"]
    assert rep.summary_location.file == "/src/libass/libass/ass_render.c"
    assert rep.summary_location.function == "wrap_lines_measure"
    assert rep.is_overflow and not rep.is_lifetime_bug
    assert split_src_path(project_frames(rep.crash_stack)[0].file) == (
        "libass",
        "libass/ass_render.c",
    )


def test_frames_without_source() -> None:
    rep = parse_report(R.ASAN_HEAP_OVERFLOW)
    libc, start = rep.crash_stack.frames[8], rep.crash_stack.frames[9]
    assert (libc.function, libc.module, libc.file) == (
        "__libc_start_main",
        "/lib/x86_64-linux-gnu/libc.so.6",
        None,
    )
    assert (start.function, start.module) == ("_start", "/out/libass_fuzzer")
    bare = parse_frame("    #1 0x55aa  (/out/fuzzer+0x55aa)")
    assert (bare.function, bare.module, bare.file) == (None, "/out/fuzzer", None)
    lib = parse_frame("    #2 0x55ab in libc.so.6")
    assert (lib.module, lib.file) == ("libc.so.6", None)
    noline = parse_frame("    #3 0x1 in foo /src/p/a.c")
    assert (noline.function, noline.file, noline.line) == ("foo", "/src/p/a.c", None)


def test_use_after_free_cpp_frames_with_freed_and_allocated_stacks() -> None:
    rep = parse_report(R.ASAN_UAF_CPP)
    assert rep.crash_type == "heap-use-after-free" and rep.access == "WRITE" and rep.is_lifetime_bug
    assert [s.kind for s in rep.stacks] == ["crash", "freed", "allocated"]
    top = rep.crash_stack.frames[0]
    assert top.function == "Json::Value::operator=(Json::Value&&)"
    assert top.function_name == "Json::Value::operator="
    assert top.file == "/src/jsoncpp/src/lib_json/json_value.cpp" and top.line == 512
    # the libc++ vector frame is dropped, the harness cuts the rest
    assert names(project_frames(rep.crash_stack)) == [
        "Json::Value::operator=",
        "Json::Reader::readValue",
        "Json::Reader::parse",
    ]
    assert names(project_frames(rep.stack("freed"))) == [
        "Json::Reader::~Reader",
        "Json::Reader::readArray",
    ]
    assert names(project_frames(rep.stack("allocated"))) == ["Json::Reader::pushValue"]


def test_double_free() -> None:
    rep = parse_report(R.ASAN_DOUBLE_FREE)
    assert rep.crash_type == "double-free" and rep.is_lifetime_bug
    assert [s.kind for s in rep.stacks] == ["crash", "freed", "allocated"]
    assert names(project_frames(rep.crash_stack)) == ["xmlFreeNode", "xmlParseElement"]


def test_stack_buffer_overflow_names_the_variable() -> None:
    rep = parse_report(R.ASAN_STACK_BUFFER_OVERFLOW)
    assert rep.crash_type == "stack-buffer-overflow" and rep.access == "WRITE"
    assert rep.stack_variable == ("name", 62)
    assert [s.kind for s in rep.stacks] == ["crash", "stack_object"]
    assert rep.stack("stack_object").frames[0].line == 60


def test_global_buffer_overflow_names_the_global() -> None:
    rep = parse_report(R.ASAN_GLOBAL_OVERFLOW)
    assert rep.crash_type == "global-buffer-overflow"
    assert rep.global_variable.function == "code_table"
    assert (rep.global_variable.file, rep.global_variable.line) == ("/src/proj/lib/codes.c", 12)


def test_segv() -> None:
    rep = parse_report(R.ASAN_SEGV)
    assert rep.crash_type == "SEGV" and rep.access == "READ" and rep.address == "0x000000000008"
    assert names(project_frames(rep.crash_stack)) == ["get_name", "print_obj"]


def test_stack_overflow_recursion() -> None:
    rep = parse_report(R.ASAN_STACK_OVERFLOW)
    assert rep.crash_type == "stack-overflow" and not rep.is_overflow
    assert len(rep.crash_stack.frames) == 40


def test_msan_with_origin_and_store_stacks() -> None:
    rep = parse_report(R.MSAN)
    assert (rep.sanitizer, rep.crash_type) == ("MemorySanitizer", "use-of-uninitialized-value")
    assert [s.kind for s in rep.stacks] == ["crash", "stored", "origin"]
    assert names(project_frames(rep.crash_stack)) == ["png_read_row", "png_read_image"]
    assert names(project_frames(rep.stack("origin"))) == ["png_malloc_base", "png_read_start_row"]
    stack_origin = parse_report(R.MSAN_STACK_ORIGIN)
    assert stack_origin.stack("origin").frames[0].function == "compute"
    assert "allocation of 'total'" in stack_origin.stack("origin").header


def test_ubsan_with_stack() -> None:
    rep = parse_report(R.UBSAN)
    assert rep.sanitizer == "UndefinedBehaviorSanitizer"
    assert rep.crash_type == "signed-integer-overflow"
    assert rep.ub_message.startswith("signed integer overflow: 2147483647 + 1")
    assert (rep.ub_location.file, rep.ub_location.line, rep.ub_location.column) == (
        "/src/proj/lib/math.c",
        57,
        18,
    )
    assert names(project_frames(rep.crash_stack)) == ["add_len", "read_chunk"]
    assert rep.summary.startswith("SUMMARY: UndefinedBehaviorSanitizer: undefined-behavior")
    assert rep.summary_location.line == 57 and rep.summary_location.function is None


def test_ubsan_without_stack() -> None:
    rep = parse_report(R.UBSAN_NO_STACK)
    assert rep.crash_type == "shift-exponent" and rep.stacks == []
    assert rep.ub_location.line == 33


def test_leak_sanitizer() -> None:
    rep = parse_report(R.LSAN)
    assert (rep.sanitizer, rep.crash_type) == ("LeakSanitizer", "memory-leak")
    assert [s.kind for s in rep.stacks] == ["leak", "leak"]
    assert names(project_frames(rep.stack("leak"))) == ["dict_new", "parse_dict"]
    assert rep.summary == "SUMMARY: AddressSanitizer: 32 byte(s) leaked in 2 allocation(s)."


def test_report_without_project_frames() -> None:
    rep = parse_report(R.NO_FRAMES)
    assert rep.crash_type == "SEGV" and rep.access == "WRITE"
    assert len(rep.crash_stack.frames) == 3
    assert all(project_frames(stack) == [] for stack in rep.stacks)


def test_summary_names_the_type_when_the_error_line_does_not() -> None:
    rep = parse_report(R.ALLOC_TOO_BIG)
    assert rep.crash_type == "allocation-size-too-big"
    assert names(project_frames(rep.crash_stack)) == ["image_alloc"]


def test_libfuzzer_deadly_signal_keeps_project_frames_above_the_harness() -> None:
    rep = parse_report(R.LIBFUZZER_DEADLY)
    assert (rep.sanitizer, rep.crash_type) == ("libFuzzer", "deadly-signal")
    assert names(project_frames(rep.crash_stack)) == ["check_state"]


def test_no_report_at_all() -> None:
    rep = parse_report("INFO: Seed: 1\nRunning: /tmp/poc\nExecuted /tmp/poc in 2 ms\n")
    assert rep.crash_type is None and rep.stacks == [] and rep.error_line == ""


def test_non_utf8_bytes_are_tolerated() -> None:
    raw = b"\xff\xfe garbage \x80\n" + R.ASAN_SEGV.replace("get_name", "get_n\xe4me").encode(
        "latin-1"
    )
    rep = parse_report(raw)
    assert rep.crash_type == "SEGV"
    assert rep.crash_stack.frames[0].function == "get_n\ufffdme"
    assert rep.crash_stack.frames[0].line == 31


def test_megabytes_of_noise_before_the_report() -> None:
    noise = "".join(
        f"INFO: #{i}\tNEW cov: {i} ft: {i} corp: 1/1b lim: 4 exec/s: 0 rss: 30Mb\n"
        for i in range(60_000)
    )
    assert len(noise) > 3_000_000
    rep = parse_report((noise + R.ASAN_HEAP_OVERFLOW).encode())
    assert rep.crash_type == "heap-buffer-overflow"
    assert names(project_frames(rep.crash_stack))[0] == "wrap_lines_measure"


def test_second_report_is_not_mixed_in() -> None:
    rep = parse_report(R.UBSAN_NO_STACK + R.ASAN_SEGV)
    assert rep.crash_type == "shift-exponent" and rep.stacks == []
    assert any("SEGV" in e for e in rep.extra_errors)


@pytest.mark.parametrize(
    "raw, short",
    [
        ("foo", "foo"),
        ("ns::Cls<int, std::vector<char> >::method(char const*) const", "ns::Cls::method"),
        ("operator new(unsigned long)", "operator new"),
        ("Json::Value::operator=(Json::Value&&)", "Json::Value::operator="),
        ("(anonymous namespace)::helper(int)", "(anonymous namespace)::helper"),
        (None, None),
    ],
)
def test_short_function_name(raw, short) -> None:
    assert short_function_name(raw) == short


def test_split_src_path() -> None:
    assert split_src_path("/src/libass/libass/ass_render.c") == ("libass", "libass/ass_render.c")
    assert split_src_path("./lib/x.c") == (None, "lib/x.c")
    assert split_src_path("/src/x.c") == (None, "/src/x.c")


# ---- real reports printed by gcc's sanitizers (see data/make_reports.sh) --------------------
# The demo's fuzz/fuzz.c is the fuzz target's file: its frames (run) are project frames only
# when no other is on the stack (gcc_asan_segv).

REAL = {
    "gcc_asan_heap_overflow": ("heap-buffer-overflow", ["buf_fill"], "allocated"),
    "gcc_asan_uaf": ("heap-use-after-free", ["buf_sum"], "freed"),
    "gcc_asan_double_free": ("double-free", ["buf_release"], "freed"),
    "gcc_asan_global_overflow": ("global-buffer-overflow", ["table_get"], None),
    "gcc_asan_stack_buffer_overflow": ("stack-buffer-overflow", ["stack_copy"], "stack_object"),
    "gcc_asan_segv": ("SEGV", ["run"], None),
    "gcc_asan_stack_overflow": ("stack-overflow", ["recurse"] * 247, None),
    "gcc_lsan_leak": ("memory-leak", None, "leak"),
    "gcc_ubsan_signed_overflow": ("signed-integer-overflow", ["scale"], None),
    "gcc_ubsan_null_load": ("null-pointer-use", ["run"], None),
}


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_gcc_reports(name: str) -> None:
    crash_type, crash_frames, other_stack = REAL[name]
    rep = parse_report((DATA / f"{name}.txt").read_bytes())
    assert rep.crash_type == crash_type
    if crash_frames is not None:
        assert names(project_frames(rep.crash_stack)) == crash_frames
        assert all(f.file.startswith("/src/demo/") for f in project_frames(rep.crash_stack))
    if other_stack is not None:
        assert project_frames(rep.stack(other_stack))
    projects = {split_src_path(f.file)[0] for s in rep.stacks for f in project_frames(s)}
    assert projects == {"demo"}


def test_error_line_without_any_frame() -> None:
    rep = parse_report(
        "==5==ERROR: AddressSanitizer: SEGV on unknown address 0x000000000000 (pc 0x0 T0)\n"
        "AddressSanitizer can not provide additional info.\n"
        "SUMMARY: AddressSanitizer: SEGV (<unknown module>)\n==5==ABORTING\n"
    )
    assert rep.crash_type == "SEGV" and rep.stacks == [] and rep.crash_stack is None
    assert project_frames(rep.crash_stack) == []


def test_the_analyst_ranks_no_fuzz_target_file_while_project_code_is_there() -> None:
    """The overflowed global lives in the fuzz target (fuzz/tables.c) and a frame of the harness
    helper is on the stack: neither is answered while lib/ code is; alone, the harness is."""
    from services.purple.analyst.ranking import rank

    text = (
        "==4==ERROR: AddressSanitizer: global-buffer-overflow on address 0x5 at pc 0x1\n"
        "READ of size 1 at 0x5 thread T0\n"
        "    #0 0x1 in lookup /src/demo/lib/table.c:12:5\n"
        "    #1 0x2 in feed /src/demo/fuzz/helpers.c:30:3\n"
        "    #2 0x3 in LLVMFuzzerTestOneInput /src/demo/fuzz/fuzz.c:9:3\n\n"
        "0x5 is located 3 bytes after global variable 'keys' defined in "
        "'/src/demo/fuzz/tables.c:4:12' (0x2) of size 2\n"
        "SUMMARY: AddressSanitizer: global-buffer-overflow /src/demo/lib/table.c:12:5 in lookup\n"
    )
    assert [(c.file, c.line) for c in rank(parse_report(text))] == [("/src/demo/lib/table.c", 12)]
    alone = text.replace("/src/demo/lib/table.c", "/src/demo/fuzz/table_fuzzer.c")
    assert {c.file for c in rank(parse_report(alone))} <= {
        "/src/demo/fuzz/table_fuzzer.c",
        "/src/demo/fuzz/helpers.c",
        "/src/demo/fuzz/tables.c",
        "/src/demo/fuzz/fuzz.c",
    }
    assert rank(parse_report(alone))
