"""Enclosing functions: tree-sitter, the brace scanner and the hunk-header fallback."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.green.kinds.arvo.scoring.functions import (
    FunctionIndex,
    language_for,
    list_functions,
    name_from_declaration,
)

DATA = Path(__file__).parent / "data"
TS, HEUR, HUNK = "tree-sitter", "heuristic", "hunk-header"


def index(rel: str, as_path: str | None = None) -> FunctionIndex:
    return FunctionIndex((DATA / rel).read_bytes(), as_path or rel)


# (file, line, expected qualified name or None, expected source, expected span)
CASES = [
    # parse.c: static, pointer-returning, K&R, FT_LOCAL_DEF macro, PHP_FUNCTION macro, #ifdef
    ("gt_project/src/parse.c", 12, "read_u16", TS, (9, 15)),
    ("gt_project/src/parse.c", 21, "dup_field", TS, (17, 24)),
    ("gt_project/src/parse.c", 31, "old_style_sum", TS, (26, 33)),
    ("gt_project/src/parse.c", 28, "old_style_sum", TS, (26, 33)),  # K&R parameter declaration
    ("gt_project/src/parse.c", 41, "tt_face_load_cmap", TS, (35, 45)),
    ("gt_project/src/parse.c", 49, "PHP_FUNCTION(strlen)", TS, (47, 51)),
    ("gt_project/src/parse.c", 57, "parse_header", HEUR, (53, 66)),
    ("gt_project/src/parse.c", 64, "parse_header", HEUR, (53, 66)),
    ("gt_project/src/parse.c", 69, None, None, None),  # a global table
    ("gt_project/src/parse.c", 5, None, None, None),
    ("gt_project/src/parse.c", 76, "record_name", TS, (73, 77)),
    # odd.c: macro-prefixed, parenthesized name, function-pointer return, attributes
    ("functions/odd.c", 9, "noop", TS, (9, 9)),
    ("functions/odd.c", 13, "ReadImage", TS, (11, 15)),
    ("functions/odd.c", 19, "pick_handler", TS, (17, 20)),
    ("functions/odd.c", 24, "legacy_handler", TS, (22, 25)),
    ("functions/odd.c", 34, "png_check", HEUR, (27, 37)),
    ("functions/odd.c", 43, None, None, None),  # "a{" inside a string of a table
    ("functions/odd.c", 54, "lookup", TS, (47, 57)),
    # methods.cc: extern "C", namespaces, class members, operators, out-of-class, templates
    ("functions/methods.cc", 7, "c_entry", TS, (6, 8)),
    ("functions/methods.cc", 18, "outer::inner::Buffer::~Buffer", TS, (17, 19)),
    ("functions/methods.cc", 21, "outer::inner::Buffer::operator==", TS, (20, 22)),
    ("functions/methods.cc", 23, None, None, None),  # a member declaration
    ("functions/methods.cc", 27, "outer::inner::Buffer::Chunk::size", TS, (27, 27)),
    ("functions/methods.cc", 34, "outer::inner::Buffer::append", TS, (32, 39)),  # in a lambda
    ("functions/methods.cc", 46, "clamp_value", TS, (44, 47)),
    ("functions/methods.cc", 50, "registry", TS, (49, 52)),
    ("functions/methods.cc", 13, None, None, None),
    ("gt_project/lib/render.cc", 12, "demo::Grid::at", TS, (11, 13)),
    ("gt_project/lib/render.cc", 23, "demo::Grid::~Grid", TS, (21, 24)),
    ("gt_project/lib/render.cc", 28, "demo::Grid::resize", TS, (26, 30)),
    ("gt_project/include/parse.h", 13, "record_valid", TS, (11, 15)),
    ("gt_project/include/parse.h", 7, None, None, None),
]


@pytest.mark.parametrize(("rel", "line", "qualified", "source", "span"), CASES)
def test_enclosing_function(rel, line, qualified, source, span):
    fn = index(rel).enclosing(line)
    if qualified is None:
        assert fn is None
        return
    assert fn is not None
    assert (fn.qualified, fn.source, (fn.start_line, fn.end_line)) == (qualified, source, span)


def test_unqualified_names():
    fns = {
        f.qualified: f.name
        for f in list_functions((DATA / "functions/methods.cc").read_bytes(), "m.cc")
    }
    assert fns["outer::inner::Buffer::~Buffer"] == "~Buffer"
    assert fns["outer::inner::Buffer::operator=="] == "operator=="
    assert fns["outer::inner::Buffer::append"] == "append"
    php = index("gt_project/src/parse.c").enclosing(49)
    assert (php.name, php.qualified) == ("strlen", "PHP_FUNCTION(strlen)")


def test_cpp_header_is_parsed_as_cpp():
    # the C grammar would read "namespace outer {" as a function named "outer"
    idx = index("functions/methods.cc", as_path="include/methods.h")
    assert idx.enclosing(13) is None
    assert idx.enclosing(27).qualified == "outer::inner::Buffer::Chunk::size"


def test_range_inside_one_function_and_across_two():
    idx = index("gt_project/src/parse.c")
    assert idx.enclosing(20, 23).name == "dup_field"
    assert idx.enclosing(14, 20) is None  # spans read_u16 and dup_field


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("static int foo(struct bar *b)", ("foo", "foo")),
        ("static int foo(struct bar *b,", ("foo", "foo")),  # git truncates long headers
        ("int Foo<T>::bar(int) const", ("bar", "Foo::bar")),
        ("bool Foo::operator==(const Foo &o) const", ("operator==", "Foo::operator==")),
        ("Foo::~Foo()", ("~Foo", "Foo::~Foo")),
        ("void (*get_cb(int k))(int)", ("get_cb", "get_cb")),
        ("static void __attribute__((noinline)) zap(void)", ("zap", "zap")),
        ("FT_LOCAL_DEF( FT_Error ) tt_face_load( TT_Face face,", ("tt_face_load", "tt_face_load")),
        ("PHP_FUNCTION(strlen)", ("strlen", "PHP_FUNCTION(strlen)")),
        ("FT_LOCAL_DEF( FT_Error )", None),
        ("static PHP_MINIT_FUNCTION(zlib)", ("zlib", "PHP_MINIT_FUNCTION(zlib)")),
        ("void INIT(void)", ("INIT", "INIT")),
        ("int MAX(int a, int b)", ("MAX", "MAX")),
        ("FT_BASE_DEF( void )", None),
        ("struct foo {", None),
        ("static const char *names[] = {", None),
        ("int x = compute(y);", None),
        ("out:", None),
        ("", None),
    ],
)
def test_name_from_hunk_header(header, expected):
    assert name_from_declaration(header) == expected


def test_hunk_header_fallback_rules():
    src = (DATA / "gt_project/src/parse.c").read_bytes()
    # no source: the header is all there is
    fn = FunctionIndex(None, "src/parse.c").enclosing(69, 69, "parse_header(struct record *rec)")
    assert (fn.name, fn.source, fn.start_line) == ("parse_header", HUNK, None)
    # with the source, a line outside every function is not attributed to the header's function
    # (which the parser found elsewhere: the header names the function before the lines)
    assert (
        FunctionIndex(src, "src/parse.c").enclosing(69, 69, "parse_header(struct record *r)")
        is None
    )
    # a prototype in the header is a declaration, not the enclosing function
    assert FunctionIndex(src, "src/parse.c").enclosing(69, 69, "int helper(int x);") is None
    assert FunctionIndex(None, "include/parse.h").enclosing(7, 7, "char *dup_field(int);") is None
    # ...but a header naming a function the parsers could not find is used
    fn = FunctionIndex(src, "src/parse.c").enclosing(69, 69, "static int mystery(void)")
    assert (fn.name, fn.source) == ("mystery", HUNK)


@pytest.mark.parametrize(
    ("path", "lang"),
    [
        ("a.c", "c"),
        ("a.h", "c"),
        ("a.cc", "cpp"),
        ("a.hpp", "cpp"),
        ("a.CPP", "cpp"),
        ("ChangeLog", None),
        ("a.txt", None),
        ("dir.d/file", None),
    ],
)
def test_language_for(path, lang):
    assert language_for(path) == lang
