"""Following the out-of-bounds value up the crash stack (services/purple/analyst/dataflow.py):
the lexical pieces, whole analyst runs on small C projects with ASan-shaped reports, and the
ranking on every locally built fixture task."""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path

import pytest

from services.purple.analyst.caccess import (
    access_sites,
    assignments,
    call_arguments,
    expr_value,
    memory_function,
    parse_params,
    select_sites,
)
from services.purple.analyst.clex import tokenize
from services.purple.analyst.dataflow import FrameCode, follow
from services.purple.analyst.policy import StackTraceAnalyst
from services.purple.protocols import RunResult, TaskContext
from services.shared.sanitizer import parse_report
from tests.support.local_env import LocalShellEnvironment, make_workspace

# ---- the lexical pieces -----------------------------------------------------------------------


def value(expr: str) -> tuple[set[str], bool]:
    v = expr_value(tokenize(expr))
    return v.vars, bool(v.computed)


@pytest.mark.parametrize(
    "expr, names, computed",
    [
        ("sym - 257", {"sym"}, False),
        ("(int)(sym - 257)", {"sym"}, False),
        ("(const unsigned char *)data + off", {"data", "off"}, False),
        ("(size_t)n * sizeof(struct hdr)", {"n"}, False),
        ("MAX_LEN - 1", set(), False),
        ("257", set(), False),
        ("s->len", set(), True),
        ("ctx.pos + 1", set(), True),
        ("read_sym(br)", {"br"}, True),
        ("tab[i]", {"i"}, True),
        ("*p", set(), True),
        ("a * b", {"a", "b"}, False),
        ("&v", set(), True),
    ],
)
def test_expr_value(expr: str, names: set[str], computed: bool) -> None:
    assert value(expr) == (names, computed)


@pytest.mark.parametrize(
    "header, name, params",
    [
        (
            "int tinf_match_length(struct tinf_bits *br, int idx)",
            "tinf_match_length",
            ["br", "idx"],
        ),
        (
            "static int\ninflate_codes(struct tinf_bits *br, struct tinf_window *w,\n"
            "              const struct tinf_huff *lit, const struct tinf_huff *dist)\n{",
            "inflate_codes",
            ["br", "w", "lit", "dist"],
        ),
        ("int f(void)", "f", []),
        ("int f()", "f", []),
        ("int f(int, char *name)", "f", [None, "name"]),
        ("void f(int (*cb)(void *, int), char buf[16], size_t n)", "f", ["cb", "buf", "n"]),
        ("int Reader::parse(const std::map<int, int> &m, int n = 4)", "Reader::parse", ["m", "n"]),
        ("int f(a, b)", "f", ["a", "b"]),  # K&R
        ("int g(int a)", "f", None),
        ("int f(int a,", "f", None),
    ],
)
def test_parse_params(header: str, name: str, params) -> None:
    assert parse_params(header, name) == params


def args(statement: str, callee: str, column: int | None = None) -> list[str] | None:
    found = call_arguments(statement, callee, column)
    return None if found is None else [" ".join(t.text for t in a) for a in found]


def test_call_arguments() -> None:
    assert args("len = tinf_match_length(br, sym - 257);", "tinf_match_length") == [
        "br",
        "sym - 257",
    ]
    assert args("if (copy(out, f(a, b), (int)(n + 1)) < 0)", "copy") == [
        "out",
        "f ( a , b )",
        "( int ) ( n + 1 )",
    ]
    assert args("x = get(a) + get(b);", "get", column=len("x = get(a) + ") + 1) == ["b"]
    assert args("x = get(a) + get(b);", "get", column=5) == ["a"]
    assert args('s = "get(" ; return GET(code);', "get") is None  # strings and macros
    assert args("rc = ops->decode(ctx, n);", "png_decode", column=len("rc = ops->") + 1) == [
        "ctx",
        "n",
    ]
    assert args("rc = ops->decode(ctx, n);", "png_decode") is None
    assert args("Parser::read(this, n);", "ns::Parser::read") == ["this", "n"]
    assert args("f();", "f") == []


def sites(statement: str, column: int | None = None) -> list[tuple[str, set[str], bool]]:
    chosen = select_sites(access_sites(statement), statement.split("\n")[0], column)
    return [(s.text, s.value.vars, bool(s.value.computed)) for s in chosen]


def test_access_sites_and_the_column() -> None:
    line = "    return length_base[idx] + (int)tinf_getbits(br, length_extra[idx]);"
    assert sites(line) == [
        ("length_base[idx]", {"idx"}, False),
        ("length_extra[idx]", {"idx"}, False),
    ]
    assert sites(line, column=line.index("length_base") + 1) == [
        ("length_base[idx]", {"idx"}, False)
    ]
    # a store: clang points at the "=", the access is its left-hand side
    store = "\t\tdst[out + 0] = rgba[0];"
    assert sites(store, column=store.index("=") + 1) == [("dst[out + 0]", {"out"}, False)]
    assert sites(store) == [("dst[out + 0]", {"out"}, False), ("rgba[0]", {"rgba"}, False)]
    # nested: the innermost access under the column
    nested = "v = tab[map[i]];"
    assert sites(nested, column=nested.index("map") + 1) == [("map[i]", {"i"}, False)]
    assert sites(nested, column=nested.index("tab") + 1) == [("tab[map[i]]", {"i"}, True)]
    # constant index: the pointer is the value; member bases are loads
    assert sites("x = hdr[3];") == [("hdr[3]", {"hdr"}, False)]
    assert sites("x = s->buf[s->pos];") == [("s->buf[s->pos]", set(), True)]
    # dereferences, pointer arithmetic, and -> only when nothing better is there
    assert sites("c = *(p + n);") == [("*(p + n)", {"n"}, False)]
    assert sites("if (*q == 'x')") == [("*q", {"q"}, False)]
    assert sites("n = hdr->size;") == [("hdr->", {"hdr"}, False)]
    # declarations are not accesses
    assert sites("char buf[16];") == []
    assert sites("char *names[4] = {0};") == []
    assert sites("int *p = base;") == []
    assert sites("return TAB_AT(idx);") == []


def test_assignments() -> None:
    body = "int i;\ni += 2;\nif (i == 3) x = i;\nn++;\nfoo(&k);\nv = a & k;\nw->i = 1;\n*p = 3;"
    assert assignments(body, "i") == ["i += 2;"]
    assert assignments(body, "n") == ["n++;"]
    assert assignments(body, "k") == ["foo(&k);"]
    assert assignments(body, "p") == []


def test_memory_function_names() -> None:
    assert memory_function("__asan_memcpy") == "memcpy"
    assert memory_function("__interceptor_memmove") == "memmove"
    assert memory_function("___interceptor_strlen") == "strlen"
    assert memory_function("__memcpy_chk") == "memcpy"
    assert memory_function("malloc") is None
    assert memory_function(None) is None


def code(function, params, statement, *, column=None, body="", line=1) -> FrameCode:
    return FrameCode(
        function=function,
        file="a.c",
        line=line,
        column=column,
        params=params,
        statement=statement,
        body=body,
        body_before=body,
    )


def test_follow_stops_where_the_value_is_computed() -> None:
    frames = [
        code("get", ["i"], "return tab[i];"),
        code("mid", ["ctx", "k"], "return get(k + 1);"),
        code("top", ["ctx"], "return mid(ctx, ctx->n);"),
    ]
    trail = follow(frames)
    assert trail.origin == 2 and trail.moved
    assert [s.values for s in trail.steps] == [["i"], ["k"], []]
    assert "member ctx->n" in trail.why and "`k + 1`" in trail.why


def test_follow_a_constant_argument_is_an_origin() -> None:
    trail = follow([code("get", ["i"], "return tab[i];"), code("f", [], "return get(300);")])
    assert trail.origin == 1 and "passes a constant" in trail.why


def test_follow_goes_cold_without_moving() -> None:
    # every frame passes the parameter on: it is the fuzzer's input
    frames = [code("get", ["i"], "return tab[i];"), code("f", ["n"], "return get(n);")]
    trail = follow(frames)
    assert trail.origin is None and "fuzz target" in trail.why
    assert "a caller that was not read" in follow(frames, more_frames=True).why
    # the caller's line does not show the call
    trail = follow([code("get", ["i"], "return tab[i];"), code("f", ["n"], "return GET(n);")])
    assert trail.origin is None and "could not be parsed" in trail.why
    # fewer arguments than the parameter's position
    trail = follow([code("get", ["t", "i"], "return t[i];"), code("f", [], "return get(x);")])
    assert trail.origin is None
    # the signature could not be read
    trail = follow([code("get", None, "return tab[i];"), code("f", [], "return get(x);")])
    assert trail.origin is None and "signature" in trail.why


def test_follow_mixed_local_and_parameter_stays() -> None:
    frames = [code("get", ["base"], "return buf[base + i];"), code("f", [], "get(n);")]
    trail = follow(frames)
    assert trail.origin == 0 and not trail.moved
    assert "i is local to get" in trail.why and "parameter(s) base" in trail.why


def test_follow_reassigned_parameter_stays() -> None:
    frames = [
        code("get", ["i"], "return tab[i];", body="i = i * 2 + 1;"),
        code("f", [], "get(n);"),
    ]
    trail = follow(frames)
    assert trail.origin == 0 and "changed there" in trail.why


def test_follow_memory_function_length_and_offset() -> None:
    frames = [
        code("put", ["dst", "src", "len"], "memcpy(dst, src, len);"),
        code("rec", ["out", "in"], "put(out, in + 1, n);"),
    ]
    trail = follow(frames, memory_fn="memcpy", access="WRITE")
    assert trail.origin == 1 and trail.steps[0].values == ["len"]
    frames = [
        code("store", ["buf", "off", "v"], "memcpy(buf + off, &v, sizeof v);"),
        code("field", ["rec", "hdr"], "store(rec, hdr[1] * 8u, 7);"),
    ]
    trail = follow(frames, memory_fn="memcpy", access="WRITE")
    assert trail.origin == 1 and trail.steps[0].values == ["off"]
    assert "element of hdr[]" in trail.why


# ---- whole runs on small C projects -----------------------------------------------------------


def at(source: str, needle: str, nth: int = 0) -> tuple[int, int]:
    """(line, column), 1-based, of the ``nth`` occurrence of ``needle``."""
    pos = -1
    for _ in range(nth + 1):
        pos = source.index(needle, pos + 1)
    line = source.count("\n", 0, pos) + 1
    return line, pos - (source.rfind("\n", 0, pos) + 1) + 1


def asan(kind: str, access: str, frames: list[tuple[str, str, int, int]], top: str = "") -> str:
    lines = [
        "INFO: Seed: 1",
        "Running: /tmp/poc",
        "=================================================================",
        f"==7==ERROR: AddressSanitizer: {kind} on address 0x602000000011 at pc 0x1 bp 0x2 sp 0x3",
        f"{access} of size 4 at 0x602000000011 thread T0",
    ]
    n = 0
    if top:
        lines.append(
            f"    #0 0x4a in {top} /src/llvm-project/compiler-rt/lib/asan/"
            "asan_interceptors_memintrinsics.cpp:63:3"
        )
        n = 1
    for i, (fn, file, line, col) in enumerate(frames, n):
        lines.append(f"    #{i} 0x5{i} in {fn} /src/proj/{file}:{line}:{col}")
    i = len(frames) + n
    lines += [
        f"    #{i} 0x60 in LLVMFuzzerTestOneInput /src/proj/fuzz/fuzz.c:9:2",
        f"    #{i + 1} 0x61 in fuzzer::Fuzzer::ExecuteCallback(unsigned char const*, unsigned long)"
        " (/out/fuzz+0x1)",
        "",
        f"SUMMARY: AddressSanitizer: {kind} /src/proj/{frames[0][1]}:{frames[0][2]}:{frames[0][3]}"
        f" in {frames[0][0]}",
        "==7==ABORTING",
    ]
    return "\n".join(lines) + "\n"


async def run_project(tmp_path: Path, files: dict[str, str], report: str) -> RunResult:
    assert parse_report(report).crash_type
    paths = make_workspace(tmp_path, project="proj", files=files, error_txt=report)
    env = LocalShellEnvironment(paths)
    result = await StackTraceAnalyst().run(
        TaskContext(task_id="t", description="", env=env, paths=paths)
    )
    assert result.status == "submitted", result.reason
    return result


def top(result: RunResult, n: int = 2) -> list[tuple[str, str | None]]:
    return [(loc.file, loc.function) for loc in result.submission.locations[:n]]


ONE_FRAME = """\
#include <stddef.h>

static const int tab[4] = {1, 2, 3, 4};

int get(int i)
{
\treturn tab[i];
}

int decode(const unsigned char *p, size_t n)
{
\tint code = p[0] & 7;

\treturn get(code);
}
"""


async def test_one_frame_up(tmp_path: Path) -> None:
    report = asan(
        "global-buffer-overflow",
        "READ",
        [
            ("get", "lib/tab.c", *at(ONE_FRAME, "tab[i]")),
            ("decode", "lib/tab.c", *at(ONE_FRAME, "get(code)")),
        ],
    )
    result = await run_project(tmp_path, {"lib/tab.c": ONE_FRAME}, report)
    assert top(result) == [("lib/tab.c", "decode"), ("lib/tab.c", "get")]
    first = result.submission.locations[0]
    line = at(ONE_FRAME, "get(code)")[0]
    assert first.line_start <= line <= first.line_end
    assert first.description.startswith("origin of the out-of-bounds value (get <- decode)")
    assert "code is local to decode (last set by `int code = p[0] & 7;`)" in first.description
    assert "i is a parameter of get; decode passes `code`" in result.submission.reasoning
    assert result.stats.commands == 4  # list+report, resolve, read the frames, submit


TWO_FRAMES = {
    "src/tables.c": """\
static const unsigned short base[29] = {3};

/* idx is the length symbol minus 257 */
int match_length(void *br, int idx)
{
\treturn base[idx] + 1;
}
""",
    "src/window.c": """\
int match_length(void *br, int idx);

int copy_match(unsigned char *out, void *br,
               int sym, int dist)
{
\tint len;

\tlen = match_length(br, (int)(sym - 257));
\treturn len + dist;
}
""",
    "src/inflate.c": """\
int read_sym(void *br);
int copy_match(unsigned char *out, void *br, int sym, int dist);

static int
inflate_block(void *br, unsigned char *out)
{
\tint sym;

\tfor (;;) {
\t\tsym = read_sym(br);
\t\tif (sym == 256)
\t\t\treturn 0;
\t\tif (copy_match(out, br,
\t\t               sym, 1) < 0)
\t\t\treturn -1;
\t}
}

int inflate(void *br, unsigned char *out)
{
\treturn inflate_block(br, out);
}
""",
}


async def test_two_frames_up_through_arithmetic_and_a_multiline_call(tmp_path: Path) -> None:
    t, w, i = TWO_FRAMES["src/tables.c"], TWO_FRAMES["src/window.c"], TWO_FRAMES["src/inflate.c"]
    report = asan(
        "global-buffer-overflow",
        "READ",
        [
            ("match_length", "src/tables.c", *at(t, "base[idx]")),
            ("copy_match", "src/window.c", *at(w, "match_length(br, (int)")),
            ("inflate_block", "src/inflate.c", *at(i, "copy_match(out")),
            ("inflate", "src/inflate.c", *at(i, "inflate_block(br, out)")),
        ],
    )
    result = await run_project(tmp_path, TWO_FRAMES, report)
    assert top(result, 3) == [
        ("src/inflate.c", "inflate_block"),
        ("src/tables.c", "match_length"),
        ("src/window.c", "copy_match"),
    ]
    why = result.submission.reasoning
    assert "copy_match passes `(int)(sym - 257)`" in why
    assert "sym is local to inflate_block (last set by `sym = read_sym(br);`)" in why
    assert "produced in inflate_block (src/inflate.c:13)" in why


LOCAL_INDEX = """\
void fill(unsigned char *out, const unsigned char *in, int n)
{
\tint i;

\tfor (i = 0; i <= n; i++)
\t\tout[i] = in[i];
}

void load(unsigned char *dst, const unsigned char *src)
{
\tint n = src[0];

\tfill(dst, src + 1, n);
}
"""


async def test_a_local_index_changes_nothing(tmp_path: Path) -> None:
    line, col = at(LOCAL_INDEX, "out[i]")
    report = asan(
        "heap-buffer-overflow",
        "WRITE",
        [
            ("fill", "lib/fill.c", line, col + len("out[i] ")),  # clang points at the "="
            ("load", "lib/fill.c", *at(LOCAL_INDEX, "fill(dst")),
        ],
    )
    result = await run_project(tmp_path, {"lib/fill.c": LOCAL_INDEX}, report)
    assert top(result) == [("lib/fill.c", "fill"), ("lib/fill.c", "load")]
    assert result.submission.locations[0].description.startswith("crash site")
    assert "i is local to fill" in result.submission.reasoning


MACROS = """\
static const int tab[4] = {1, 2, 3, 4};
#define TAB_AT(i) (tab[(i)])
#define GET(x) get((x))

int get(int i)
{
\treturn TAB_AT(i);
}

int get2(int i)
{
\treturn tab[i];
}

int decode(const unsigned char *p)
{
\tint code = p[0];

\treturn GET(code) + GET2(code);
}
"""


@pytest.mark.parametrize("callee", ["get", "get2"])
async def test_macros_fall_back_to_the_crash_site(tmp_path: Path, callee: str) -> None:
    # get: the access hides in a macro; get2: the caller calls it through one
    crash = "TAB_AT(i)" if callee == "get" else "tab[i]"
    report = asan(
        "global-buffer-overflow",
        "READ",
        [
            (callee, "lib/m.c", *at(MACROS, crash, 1 if callee == "get" else 0)),
            ("decode", "lib/m.c", *at(MACROS, "GET(code)")),
        ],
    )
    result = await run_project(tmp_path, {"lib/m.c": MACROS}, report)
    assert top(result) == [("lib/m.c", callee), ("lib/m.c", "decode")]
    why = result.submission.reasoning
    if callee == "get":
        assert "no array, pointer or memory-function access" in why
    else:
        assert "could not be parsed" in why and "crash site stays first" in why


MEMCPY = """\
#include <string.h>

static void put_bytes(unsigned char *dst, const unsigned char *src, size_t len)
{
\tmemcpy(dst, src, len);
}

void read_record(unsigned char *out, const unsigned char *in)
{
\tsize_t n = (size_t)in[0] * 4;

\tput_bytes(out, in + 1, n);
}

static void store(unsigned char *buf, size_t off, unsigned v)
{
\tmemcpy(buf + off, &v, sizeof v);
}

void put_field(unsigned char *rec, const unsigned char *hdr)
{
\tstore(rec, hdr[1] * 8u, 7);
}
"""


@pytest.mark.parametrize(
    "crash, caller, value",
    [
        (
            ("put_bytes", "memcpy(dst"),
            ("read_record", "put_bytes(out"),
            "n is local to read_record",
        ),
        (("store", "memcpy(buf"), ("put_field", "store(rec"), "put_field computes it"),
    ],
)
async def test_memcpy_length_and_pointer_offset(tmp_path: Path, crash, caller, value) -> None:
    report = asan(
        "heap-buffer-overflow",
        "WRITE",
        [
            (crash[0], "lib/rec.c", *at(MEMCPY, crash[1])),
            (caller[0], "lib/rec.c", *at(MEMCPY, caller[1])),
        ],
        top="__asan_memcpy",
    )
    result = await run_project(tmp_path, {"lib/rec.c": MEMCPY}, report)
    assert top(result) == [("lib/rec.c", caller[0]), ("lib/rec.c", crash[0])]
    assert value in result.submission.locations[0].description


async def test_lifetime_bugs_are_not_followed(tmp_path: Path) -> None:
    report = asan(
        "heap-use-after-free",
        "READ",
        [
            ("get", "lib/tab.c", *at(ONE_FRAME, "tab[i]")),
            ("decode", "lib/tab.c", *at(ONE_FRAME, "get(code)")),
        ],
    )
    result = await run_project(tmp_path, {"lib/tab.c": ONE_FRAME}, report)
    assert top(result, 1) == [("lib/tab.c", "get")]
    # no value trail; one command reads the crash frame (where the dangling pointer was taken)
    assert result.stats.commands == 4


# ---- the locally built fixture tasks ---------------------------------------------------------

catalog = pytest.importorskip("fixtures.catalog")
TASKS = [t for t in catalog.load_tasks() if (t.assets_dir() / "error.txt").exists()]

# The top location per fixture. Where the bad value is local to the crashing function, or the bug
# is not spatial, nothing changes: the crash site (the first free for the double free). 900007's
# index is a parameter two frames down; inflate_codes produces it.
EXPECTED_TOP = {
    900001: ("src/entity.c", "xml_decode_entity"),
    900002: ("src/rle.c", "tga_rle_decode"),
    900003: ("lib/archive.c", "add_hardlink"),
    900004: ("src/section.c", "section_set"),
    900005: ("src/info.c", "info_read_tag"),
    900006: ("src/decode.c", "unpack_indexed"),  # the fix (header.c) is on no stack
    900007: ("src/inflate.c", "inflate_codes"),
    900008: ("src/list.c", "hdr_list_find"),  # the fix (hdr_list_fold) is on the free stack
    900009: ("src/parser.c", "parse_block"),
    900010: ("src/record.c", "record_walk"),  # off is a parameter of the reader
    900011: ("src/draw.c", "draw_hspan"),  # through the PIX_OFFSET macro
    # the size helper rounds the width down where the row copy rounds it up (rounding.py)
    900012: ("src/metrics.c", "psf_glyph_size"),
    # C++: the crash site (an inline method of an exported class in a header; the function
    # that wrote through the reference operator() returned)
    900013: ("include/tokstream/reader.h", "tokstream::Reader::u16"),
    900014: ("src/paint.cpp", "gridpaint::paint"),
}


async def run_fixture(task, tmp_path: Path) -> RunResult:
    assets = task.assets_dir()
    paths = make_workspace(tmp_path, error_txt=(assets / "error.txt").read_bytes())
    shutil.rmtree(paths.source_dir)
    with tarfile.open(assets / "repo-vul.tar.gz") as tar:
        tar.extractall(tmp_path, filter="data")
    env = LocalShellEnvironment(paths)
    return await StackTraceAnalyst().run(
        TaskContext(task_id=str(task.id), description="", env=env, paths=paths)
    )


@pytest.mark.skipif(not TASKS, reason="fixture assets not built (python -m fixtures.build)")
@pytest.mark.parametrize("task", TASKS, ids=lambda t: str(t.id))
async def test_fixture_ranking(task, tmp_path: Path) -> None:
    result = await run_fixture(task, tmp_path)
    assert result.status == "submitted", result.reason
    locs = result.submission.locations
    assert (locs[0].file, locs[0].function) == EXPECTED_TOP[task.id]
    assert len(locs) <= 5 and all(loc.line_end - loc.line_start < 50 for loc in locs)
    assert len({(loc.file, loc.function) for loc in locs}) == len(locs)  # one per function
    assert len({(loc.file, loc.line_start) for loc in locs}) == len(locs)
    moved = EXPECTED_TOP[task.id] != (task.crash_file, task.crash_name)
    if moved and task.crash_type != "double-free":  # the crash site is second
        assert (locs[1].file, locs[1].function) == (task.crash_file, task.crash_name)
        assert locs[0].description.startswith(
            ("origin of the out-of-bounds value", "computes the size of the overflowed buffer")
        )


@pytest.mark.skipif(
    not any(t.id == 900007 for t in TASKS),
    reason="fixture 900007 not built (python -m fixtures.build)",
)
async def test_fixture_900007_explains_the_trail(tmp_path: Path) -> None:
    task = next(t for t in TASKS if t.id == 900007)
    result = await run_fixture(task, tmp_path)
    why = result.submission.reasoning
    assert "idx is a parameter of tinf_match_length; window_copy_match passes `sym - 257`" in why
    assert "inflate_codes passes `sym`" in why
    assert "last set by `sym = tinf_decode_sym(br, lit);`" in why
    first = result.submission.locations[0]
    # the fix inserts a check between lines 45 and 46, just above the call on line 47
    assert first.line_start <= 46 and first.line_end >= 47


async def test_a_failing_trail_still_submits_the_stack_ranking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args, **kwargs):
        raise RuntimeError("lexer bug")

    monkeypatch.setattr("services.purple.analyst.policy.follow", broken)
    report = asan(
        "global-buffer-overflow",
        "READ",
        [
            ("get", "lib/tab.c", *at(ONE_FRAME, "tab[i]")),
            ("decode", "lib/tab.c", *at(ONE_FRAME, "get(code)")),
        ],
    )
    result = await run_project(tmp_path, {"lib/tab.c": ONE_FRAME}, report)
    assert top(result) == [("lib/tab.c", "get"), ("lib/tab.c", "decode")]
