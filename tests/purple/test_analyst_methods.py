"""The analyst's methods beyond the crash frame: line-less frames, recursion, allocator wrappers,
macros, guard regions, dangling pointers, size helpers, and spans that never leave a function
or a file. Each runs the real analyst on a small C project through a local shell."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.purple.analyst.cfunc import FunctionSpan
from services.purple.analyst.clex import macro_transparent
from services.purple.analyst.dataflow import FrameCode, follow, guard_line
from services.purple.analyst.ranking import Candidate, rank
from services.purple.analyst.resolve import Resolved, locations, parse_resolved, span
from services.purple.analyst.wrappers import is_wrapper
from services.purple.protocols import RunResult, TaskContext
from services.shared.sanitizer import parse_report
from tests.support.local_env import LocalShellEnvironment, make_workspace


def report(kind: str, stacks: dict[str, list[str]], access: str = "READ") -> str:
    """An ASan report; each frame is ``"function file[:line[:col]]"`` (file under /src/proj)."""
    lines = [
        f"==7==ERROR: AddressSanitizer: {kind} on address 0x602000000011 at pc 0x1 bp 0x2 sp 0x3",
        f"{access} of size 4 at 0x602000000011 thread T0",
    ]
    headers = {"freed": "freed by thread T0 here:", "allocated": "allocated by thread T0 here:"}
    first = stacks["crash"][0].split()
    for name, frames in stacks.items():
        if name != "crash":
            lines += ["", headers[name]]
            if name == "freed":
                lines.append("    #0 0x1 in free (/out/fuzz+0x1)")
            else:
                lines.append("    #0 0x1 in malloc (/out/fuzz+0x1)")
        n = 0 if name == "crash" else 1
        for i, frame in enumerate(frames, n):
            fn, where = frame.split()
            lines.append(f"    #{i} 0x5{i} in {fn} /src/proj/{where}")
        lines.append(
            f"    #{len(frames) + n} 0x60 in LLVMFuzzerTestOneInput /src/proj/fuzz/f.c:9:2"
        )
    lines += ["", f"SUMMARY: AddressSanitizer: {kind} /src/proj/{first[1]} in {first[0]}"]
    return "\n".join(lines) + "\n"


async def run(tmp_path: Path, files: dict[str, str], text: str) -> RunResult:
    assert parse_report(text).crash_type
    paths = make_workspace(tmp_path, project="proj", files=files, error_txt=text)
    env = LocalShellEnvironment(paths)
    from services.purple.analyst.policy import StackTraceAnalyst

    result = await StackTraceAnalyst().run(
        TaskContext(task_id="t", description="", env=env, paths=paths)
    )
    assert result.status == "submitted", result.reason
    return result


def locs(result: RunResult) -> list[tuple[str, str | None, int, int]]:
    return [(x.file, x.function, x.line_start, x.line_end) for x in result.submission.locations]


# ---- line-less and recursive frames -----------------------------------------------------------

TREE = """\
#include <stddef.h>
#include "tree.h"

static int depth_of(const struct node *n)
{
\treturn n->depth;
}

int walk(struct node *n, int *stack, int top)
{
\tif (n == NULL)
\t\treturn top;
\tstack[top] = depth_of(n);
\tif (n->left)
\t\treturn walk(n->left, stack, top + 1);
\treturn walk(n->right, stack, top + 1);
}
"""


async def test_line_less_recursive_frames_resolve_to_the_function_once(tmp_path: Path) -> None:
    """ASan prints merged recursive calls without a line: the frame stands for its function's
    span (lines 9-17), never lines 1-3, and the recursion takes one place."""
    text = report(
        "heap-buffer-overflow",
        {
            "crash": [
                "walk lib/tree.c:13:13",
                "walk lib/tree.c",
                "walk lib/tree.c",
                "walk lib/tree.c",
                "missing_fn lib/tree.c",
            ]
        },
        access="WRITE",
    )
    result = await run(tmp_path, {"lib/tree.c": TREE}, text)
    got = locs(result)
    assert [g[:2] for g in got] == [("lib/tree.c", "walk")]  # collapsed; missing_fn dropped
    assert got[0][2] <= 13 <= got[0][3]
    assert all(g[2] > 3 for g in got)


async def test_a_line_less_frame_alone_gives_its_whole_function(tmp_path: Path) -> None:
    text = report(
        "heap-buffer-overflow", {"crash": ["walk lib/tree.c", "depth_of lib/tree.c:6:12"]}
    )
    result = await run(tmp_path, {"lib/tree.c": TREE}, text)
    assert locs(result)[0] == ("lib/tree.c", "walk", 9, 17)
    assert locs(result)[1][:2] == ("lib/tree.c", "depth_of")


# ---- spans never leave the function or the file -----------------------------------------------


def test_span_stays_inside_function_and_file() -> None:
    fn = FunctionSpan(start=10, body_start=11, end=14, name="f")
    r = Resolved(Candidate("/src/p/a.c", 12, "f", "crash site"), "a.c", fn, "/x/a.c", 15)
    assert span(r) == (11, 13)  # not the header line 10 (before=3 would reach 9)
    r = Resolved(Candidate("/src/p/a.c", 14, "f", "crash site"), "a.c", fn, "/x/a.c", 14)
    assert span(r) == (11, 14)  # the file ends at 14
    lineless = Resolved(Candidate("/src/p/a.c", None, "f", "caller"), "a.c", fn, "/x/a.c", 15)
    assert span(lineless) == (10, 14)
    long = FunctionSpan(start=100, body_start=101, end=400, name="g")
    big = Resolved(Candidate("/src/p/a.c", None, "g", "caller"), "a.c", long, "/x/a.c", 500)
    assert span(big) == (100, 149)  # at most 50 lines: longer can never match a line


def test_a_line_past_the_end_of_the_file_is_dropped() -> None:
    cands = [
        Candidate("/src/p/a.c", 99, "f", "crash site"),
        Candidate("/src/p/a.c", 3, "f", "caller"),
    ]
    out = (
        "@@ARVO_ANALYST@@ 0 99 20 /w/src-vul/p/a.c\n1: int f(void)\n2: {\n20: }\n"
        "@@ARVO_ANALYST@@ 1 3 20 /w/src-vul/p/a.c\n1: int f(void)\n2: {\n20: }\n"
    )
    resolved = parse_resolved(out, cands, "/w/src-vul")
    assert [r.candidate.line for r in resolved] == [3]
    assert [(x.line_start, x.line_end) for x in locations(resolved)] == [(2, 4)]


# ---- allocator wrappers -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "body, kind, known, expected",
    [
        ("if (p != NULL)\n    hook_free(p);", "free", set(), True),  # forwards to a hook
        ("free(b->data);\nfree(b);", "free", set(), True),  # a destructor
        ("x_free(f->name);\nx_free(f->value);\nx_free(f);", "free", {"x_free"}, True),
        ("if (n == 0)\n    n = 1;\nreturn alloc_fn(n);", "alloc", set(), True),
        (
            "rc = append(f, dup);\nif (rc)\n    return rc;\nunlink(l, dup);\nx_free(dup);",
            "free",
            {"x_free"},
            False,  # the decision: the free is one call among others
        ),
        ("return parse(p, n);", "free", set(), False),
        ("\n".join(["free(p);"] + ["x++;"] * 30), "free", set(), False),  # too long
    ],
)
def test_is_wrapper(body: str, kind: str, known: set[str], expected: bool) -> None:
    assert is_wrapper(body, kind, known) is expected


def test_rank_puts_the_free_decision_above_the_wrappers() -> None:
    text = report(
        "heap-use-after-free",
        {
            "crash": ["find src/list.c:46:39"],
            "freed": ["x_free src/mem.c:38:9", "field_free src/field.c:53:5", "fold src/list.c:81"],
            "allocated": ["x_malloc src/mem.c:25:12", "field_new src/field.c:11:27"],
        },
    )
    names = [c.function for c in rank(parse_report(text), wrappers=frozenset())]
    assert names[:3] == ["find", "x_free", "x_malloc"]
    wrapped = rank(parse_report(text), wrappers=frozenset({"x_free", "field_free", "x_malloc"}))
    assert [c.function for c in wrapped][:3] == ["find", "fold", "field_new"]
    assert "above x_free, field_free" in wrapped[1].role


LIST = """\
#include "list.h"

struct item *list_find(struct list *l, int key)
{
\tstruct item *it = l->cache;

\t/* the last hit first: lookups come in runs */
\tif (key < 0)
\t\treturn NULL;
\tif (it != NULL && it->key == key)
\t\treturn it;
\treturn NULL;
}

int list_fold(struct list *l)
{
\tstruct item *dup = l->head->next;

\tif (dup == NULL)
\t\treturn 0;
\tl->head->value += dup->value;
\tl->head->next = dup->next;
\titem_free(dup);
\treturn 1;
}
"""

MEM = """\
#include <stdlib.h>
#include "list.h"

static void (*free_hook)(void *) = free;

void item_free(struct item *it)
{
\tif (it != NULL)
\t\tfree_hook(it);
}
"""


async def test_use_after_free_ranks_the_decision_site_second(tmp_path: Path) -> None:
    text = report(
        "heap-use-after-free",
        {
            "crash": ["list_find src/list.c:10:25"],
            "freed": ["item_free src/mem.c:9:3", "list_fold src/list.c:22:2"],
        },
    )
    result = await run(tmp_path, {"src/list.c": LIST, "src/mem.c": MEM}, text)
    got = locs(result)
    assert got[0][:2] == ("src/list.c", "list_find")
    assert got[0][2:] == (5, 11)  # opens where the dangling pointer was taken (line 5)
    assert got[1][:2] == ("src/list.c", "list_fold")
    assert ("src/mem.c", "item_free") in [g[:2] for g in got[2:]]


# ---- macros, guards ---------------------------------------------------------------------------


def test_a_function_like_macro_is_not_a_producer() -> None:
    crash = FrameCode(
        "put", "c.c", 3, None, ["cv", "x", "y", "c"], "cv->px[PIX_OFF(cv, x, y)] = c;"
    )
    caller = FrameCode("hspan", "d.c", 9, None, ["cv", "x0", "x1", "y"], "put(cv, x, y, 1);")
    assert follow([crash, caller]).origin == 0  # read as a call: "computed" in put
    macros = {"PIX_OFF"}
    crash.statement = macro_transparent(crash.statement, macros)
    trail = follow([crash, caller])
    assert trail.origin == 1 and "x is local to hspan" in trail.steps[-1].note


def test_guard_line_is_the_nearest_check_of_the_value() -> None:
    code = FrameCode("f", "a.c", 30, None, ["n"], "buf[out] = 0;")
    code.checks = [(5, "while (out < len) {"), (20, "if (count > len - out)"), (25, "if (k)")]
    assert guard_line(code, ["out"]) == 20
    assert guard_line(code, ["k"]) == 25
    assert guard_line(code, ["len"], reach=5) is None


# ---- size helpers on no stack -----------------------------------------------------------------

GLYPH = """\
#include <string.h>
#include "font.h"

void load(struct font *f, const unsigned char *src)
{
\tsize_t row = row_bytes(&f->hdr);

\tfor (unsigned y = 0; y < f->hdr.height; y++)
\t\tmemcpy(f->bitmap + y * row, src + y * row, row);
}
"""

FONT = """\
#include <stdlib.h>
#include "font.h"

int font_open(struct font *f, const unsigned char *buf)
{
\tf->size = f->hdr.count * glyph_size(&f->hdr);
\tf->bitmap = malloc(f->size);
\tif (f->bitmap == NULL)
\t\treturn -1;
\tload(f, buf);
\treturn 0;
}
"""

METRICS = """\
#include "font.h"

size_t row_bytes(const struct hdr *h)
{
\treturn (h->width + 7) / 8;
}

size_t glyph_size(const struct hdr *h)
{
\treturn h->height * (h->width / 8);
}
"""


async def test_the_size_helper_of_the_allocation_is_found_off_the_stack(tmp_path: Path) -> None:
    text = report(
        "heap-buffer-overflow",
        {
            "crash": ["load src/glyph.c:9:3", "font_open src/font.c:10:2"],
            "allocated": ["font_open src/font.c:7:14"],
        },
        access="WRITE",
    )
    files = {"src/glyph.c": GLYPH, "src/font.c": FONT, "src/metrics.c": METRICS}
    result = await run(tmp_path, files, text)
    got = locs(result)
    assert ("src/metrics.c", "glyph_size", 8, 11) in got
    assert got.index(("src/metrics.c", "glyph_size", 8, 11)) <= 2
    assert "glyph_size" in result.submission.locations[2].description


PROTO = """\
static int walk(struct node *n,
                int *stack, int top)
static int other(void);

static int walk(struct node *n,
                int *stack, int top)
{
\treturn top;
}
"""


async def test_a_line_less_frame_skips_a_multi_line_prototype(tmp_path: Path) -> None:
    text = report("heap-buffer-overflow", {"crash": ["walk lib/tree.c"]})
    result = await run(tmp_path, {"lib/tree.c": PROTO}, text)
    assert locs(result) == [("lib/tree.c", "walk", 5, 9)]


SAME_LINE_BRACE = """\
int walk(struct node *n);

int walk(struct node *n,
         int top) {
\treturn top;
}
"""


async def test_a_line_less_frame_finds_a_definition_with_its_brace_on_the_header(
    tmp_path: Path,
) -> None:
    text = report("heap-buffer-overflow", {"crash": ["walk lib/tree.c"]})
    result = await run(tmp_path, {"lib/tree.c": SAME_LINE_BRACE}, text)
    assert locs(result) == [("lib/tree.c", "walk", 3, 6)]


def test_size_callees_are_size_computations_not_allocators() -> None:
    from services.purple.analyst.helpers import size_callees

    code = FrameCode("f", "a.c", 9, None, ["ctx"], "p = xmlMallocAtomic(buf_len(ctx) + 1);")
    assert size_callees(code) == ["buf_len"]
    code = FrameCode("f", "a.c", 9, None, ["h"], "out = malloc(n);")
    code.body_before = "n = rows(h) * stride_bytes(h);\nlog_debug(h);"
    assert size_callees(code) == ["stride_bytes"]  # further away: size-like names only


# ---- use-after-free: the other holders of the freed pointer ------------------------------------


@pytest.mark.parametrize(
    "line, column, member",
    [
        ("\tif (l->cache != NULL && l->cache->key == key)", 35, "cache"),
        ("\te->size = target->size;", 20, None),  # a local: see pointer_taken_at
        ("\tx = a.b->c;", 11, "b"),
        ("\tx = tab[i]->c;", 14, None),
        ("\tx = y;", 6, None),
    ],
)
def test_dangling_member(line: str, column: int, member: str | None) -> None:
    from services.purple.analyst.holders import dangling_member

    assert dangling_member(line, column) == member


CACHE = """\
#include "list.h"

void list_remember(struct list *l, struct item *it)
{
\tl->cache = it;
}

int list_get(struct list *l, int key)
{
\tif (l->cache != NULL && l->cache->key == key)
\t\treturn l->cache->value;
\treturn -1;
}

void list_drop(struct list *l, struct item *it)
{
\tl->head = it->next;
\tl->count--;
\tfree(it);
}

void list_reset(struct list *l)
{
\tl->cache = NULL;
}
"""


async def test_use_after_free_names_the_member_that_kept_the_pointer(tmp_path: Path) -> None:
    text = report(
        "heap-use-after-free",
        {"crash": ["list_get src/list.c:10:35"], "freed": ["list_drop src/list.c:19:2"]},
    )
    result = await run(tmp_path, {"src/list.c": CACHE}, text)
    got = {g[1]: g for g in locs(result)}
    assert got["list_remember"][2] <= 5 <= got["list_remember"][3]
    assert "list_reset" not in got  # a store of NULL clears, it does not keep
    desc = next(x.description for x in result.submission.locations if x.function == "list_remember")
    assert "->cache" in desc


# ---- the size helper that rounds down what the access rounds up ------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("return (size_t)h->height * (h->width / 8);", [("width", 8, False)]),
        ("return ((size_t)h->width + 7) / 8;", [("width", 8, True)]),
        ("n = (bits + CHAR_BIT - 1) / CHAR_BIT;", [("bits", 8, True)]),
        ("n = (w + 8 - 1) / 8;", [("w", 8, True)]),
        ("x = (w * bpp + 7) >> 3;", [("bpp,w", 8, True)]),
        ("y = w >> 3;", [("w", 8, False)]),
        ("return ((width * bpp / 8) + 3) & ~3u;", [("bpp,width", 8, False)]),
        ("z = t[i].len / 4;", [("len", 4, False)]),
        ("p = *q / 8;", [("q", 8, False)]),
        ("v = (w + 3) / 8;", [("w", 8, False)]),  # not K - 1: not a rounding up
        ("v = w / 3;", []),  # not a power of two
        ("v = flags >> s;", []),  # not a constant
        ("byte = row[x / per_byte];", []),
    ],
)
def test_divisions_round_up_or_down(text: str, expected: list[tuple[str, int, bool]]) -> None:
    from services.purple.analyst.rounding import divisions

    got = [(",".join(sorted(d.quantity)), d.divisor, d.up) for d in divisions(text)]
    assert got == expected


def test_rounding_mismatch_needs_the_same_quantity_and_divisor() -> None:
    from services.purple.analyst.rounding import at_buffer_end, mismatch

    down = "return h->height * (h->width / 8);"
    assert mismatch(down, "row = (h->width + 7) / 8;") is not None
    assert mismatch(down, "row = (h->height + 7) / 8;") is None  # another quantity
    assert mismatch(down, "row = (h->width + 3) / 4;") is None  # another divisor
    assert mismatch(down, "row = h->width / 8;") is None  # the access rounds down too
    both = "return h->height * (h->width / 8) + (h->width + 7) / 8;"
    assert mismatch(both, "row = (h->width + 7) / 8;") is None  # the size rounds up too
    assert at_buffer_end("0 bytes to the right of 8-byte region")
    assert at_buffer_end("0 bytes after 24-byte region")
    assert not at_buffer_end("3 bytes to the right of 8-byte region")
    assert not at_buffer_end("2 bytes to the left of 8-byte region")
    assert not at_buffer_end(None)


def glyph_report(region: str = "0 bytes to the right of 16-byte region") -> str:
    """ASan's report of a row copy (``memcpy``) past the end of the glyph bitmap."""
    return f"""\
==7==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x602000000020 at pc 0x1 bp 0x2 sp 0x3
WRITE of size 2 at 0x602000000020 thread T0
    #0 0x40 in __asan_memcpy (/out/fuzz+0x40)
    #1 0x51 in load /src/proj/src/glyph.c:9:3
    #2 0x52 in font_open /src/proj/src/font.c:10:2
    #3 0x60 in LLVMFuzzerTestOneInput /src/proj/fuzz/f.c:9:2

0x602000000020 is located {region} [0x602000000010,0x602000000020)
allocated by thread T0 here:
    #0 0x1 in malloc (/out/fuzz+0x1)
    #1 0x52 in font_open /src/proj/src/font.c:7:14
    #2 0x60 in LLVMFuzzerTestOneInput /src/proj/fuzz/f.c:9:2

SUMMARY: AddressSanitizer: heap-buffer-overflow (/out/fuzz+0x40) in __asan_memcpy
"""


async def test_the_size_helper_that_rounds_down_what_the_access_rounds_up_leads(
    tmp_path: Path,
) -> None:
    files = {"src/glyph.c": GLYPH, "src/font.c": FONT, "src/metrics.c": METRICS}
    result = await run(tmp_path, files, glyph_report())
    got = locs(result)
    assert got[0] == ("src/metrics.c", "glyph_size", 8, 11)
    assert got[1][:2] == ("src/glyph.c", "load")  # the crash site follows
    first = result.submission.locations[0].description
    assert "rounds width down (`h->width / 8`)" in first
    assert "(`(h->width + 7) / 8`)" in first
    assert "glyph_size" in result.submission.reasoning


@pytest.mark.parametrize(
    "metrics, region",
    [
        # the size is consistent with the access: the overflow is the index's, not the size's
        (
            METRICS.replace("(h->width / 8)", "row_bytes(h)"),
            "0 bytes to the right of 16-byte region",
        ),
        # the access did not start at the buffer's end: no evidence that the size is short
        (METRICS, "5 bytes to the right of 16-byte region"),
    ],
)
async def test_without_evidence_against_the_size_the_crash_site_leads(
    tmp_path: Path, metrics: str, region: str
) -> None:
    files = {"src/glyph.c": GLYPH, "src/font.c": FONT, "src/metrics.c": metrics}
    result = await run(tmp_path, files, glyph_report(region))
    got = locs(result)
    assert got[0][:2] == ("src/glyph.c", "load")
    assert ("src/metrics.c", "glyph_size", 8, 11) in got[1:]


UNPACK = """\
#include "img.h"

void unpack(struct img *im, const unsigned char *src)
{
\tsize_t i = 0;

\twhile (i < (im->bits + 7) / 8) {
\t\tim->data[i] = src[i];
\t\ti++;
\t}
}
"""

IMG = """\
#include <stdlib.h>
#include "img.h"

static size_t data_size(const struct img *im)
{
\treturn im->bits >> 3;
}

int img_open(struct img *im, const unsigned char *src)
{
\tim->data = malloc(data_size(im));
\tif (im->data == NULL)
\t\treturn -1;
\tunpack(im, src);
\treturn 0;
}
"""


async def test_the_bound_of_the_loop_around_the_access_is_the_access_side(
    tmp_path: Path,
) -> None:
    """An index filled up to a bound that rounds up, into a buffer sized by a helper (here in
    the allocating file, with a shift) that rounds down."""
    text = report(
        "heap-buffer-overflow",
        {
            "crash": ["unpack src/unpack.c:8:15", "img_open src/img.c:14:2"],
            "allocated": ["img_open src/img.c:11:13"],
        },
        access="WRITE",
    )
    head, _, tail = text.partition("\nSUMMARY:")
    text = f"{head}\n0x602000000011 is located 0 bytes after 1-byte region\n\nSUMMARY:{tail}"
    files = {"src/unpack.c": UNPACK, "src/img.c": IMG}
    result = await run(tmp_path, files, text)
    got = locs(result)
    assert got[0][:2] == ("src/img.c", "data_size")
    assert got[1][:2] == ("src/unpack.c", "unpack")
    assert "rounds bits down (`im->bits >> 3`)" in result.submission.locations[0].description
