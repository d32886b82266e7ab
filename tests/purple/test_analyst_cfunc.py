"""The analyst's enclosing function: tree-sitter on the lines around the target line (the same
awk commands the analyst sends), the column-0 outline when the function is longer than them."""

import subprocess
from pathlib import Path

import pytest

from services.purple.analyst.cfunc import (
    WINDOW_AFTER,
    WINDOW_BEFORE,
    WINDOW_BYTES,
    awk_outline,
    awk_window,
    enclosing_function,
    parse_numbered,
    parsed_function,
)
from services.purple.analyst.clex import clean
from tests.purple.test_analyst import C_SOURCE

CPP_HEADER = """\
#pragma once
namespace tok {

class EXPORT Reader {
 public:
  explicit Reader(int n)
      : n_(n) {}

  // 16 bits at `at`.
  unsigned u16(unsigned at) const {
    if (at >= n_) return 0;
    return buf_[at] | (buf_[at + 1] << 8);
  }

  int &operator()(int x) { return cells_[x]; }

 private:
  int n_;
};

}  // namespace tok
"""


def read(tmp_path: Path, name: str, text: str, line: int, *, window: bool = True) -> dict:
    path = tmp_path / name
    path.write_text(text)
    cmd = awk_outline(str(path), line, max_lines=30)
    if window:
        cmd += "; " + awk_window(str(path), line)
    out = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, check=True).stdout
    return parse_numbered(out)


@pytest.mark.parametrize(
    "line, name, expected",
    [
        (12, "tok::Reader::u16", (10, 10, 13, "u16")),
        (15, "tok::Reader::operator()", (15, 15, 15, "operator()")),
        (12, None, (10, 10, 13, "u16")),
    ],
)
def test_methods_inside_a_class_body(tmp_path: Path, line, name, expected) -> None:
    """Indented, so the column-0 outline never saw them (the C++ fixtures' spans ran past
    them); tree-sitter reads them whole."""
    lines = read(tmp_path, "reader.h", CPP_HEADER, line)
    fn = enclosing_function(lines, line, path="include/reader.h", name=name)
    assert (fn.start, fn.body_start, fn.end, fn.name) == expected
    outline_only = read(tmp_path, "reader.h", CPP_HEADER, line, window=False)
    assert enclosing_function(outline_only, line).start is None


@pytest.mark.parametrize("line", [10, 15, 16, 19, 24])
def test_same_answer_as_the_outline_on_c(tmp_path: Path, line) -> None:
    """Where the column-0 outline was right, tree-sitter agrees (24: a table, no function)."""
    with_window = enclosing_function(read(tmp_path, "a.c", C_SOURCE, line), line, path="a.c")
    outline = enclosing_function(read(tmp_path, "a.c", C_SOURCE, line, window=False), line)
    assert with_window == outline


def test_a_function_longer_than_the_window_falls_back_to_the_outline(tmp_path: Path) -> None:
    body = "".join(f"\tx += {i};\n" for i in range(WINDOW_BEFORE + WINDOW_AFTER + 20))
    source = f"static int\nlong_one(int x)\n{{\n{body}\treturn x;\n}}\n"
    line = 3 + WINDOW_BEFORE + 10
    lines = read(tmp_path, "long.c", source, line)
    assert parsed_function(lines, line, "long.c", "long_one") is None  # header not fetched
    fn = enclosing_function(lines, line, path="long.c", name="long_one")
    assert (fn.start, fn.body_start, fn.name) == (1, 3, "long_one")
    assert fn.end == source.count("\n")


def test_the_window_grows_around_the_line_within_its_byte_budget(tmp_path: Path) -> None:
    """Ten candidates and their outlines must fit green's 64 KiB output cap: in a file of long
    lines the window shrinks around the target line instead of growing past the budget."""
    path = tmp_path / "long_lines.c"
    path.write_text("".join(f"int v{i} = {'1 + ' * 60}1;\n" for i in range(1, 201)))
    out = subprocess.run(
        ["bash", "-c", awk_window(str(path), 100)], capture_output=True, text=True, check=True
    ).stdout
    lines = parse_numbered(out)
    assert 100 in lines and len(out) <= WINDOW_BYTES
    assert sorted(lines) == list(range(min(lines), max(lines) + 1))  # contiguous
    assert abs((100 - min(lines)) - (max(lines) - 100)) <= 1  # centred on the line
    assert all(len(text) <= 120 for text in lines.values())


def test_a_name_that_disagrees_or_an_unclosed_body_is_not_taken() -> None:
    lines = dict(enumerate(["", "int other(void) {", "  return 1;", "}", ""], start=10))
    assert parsed_function(lines, 12, "a.c", "wanted") is None
    assert parsed_function(lines, 12, "a.c", "other") is not None
    cut = {10: "", 11: "int f(void) {", 12: "  return 1;", 13: ""}
    assert parsed_function(cut, 12, "a.c") is None  # its closing brace was not fetched


# ---- comments and literals (clex.clean, by tree-sitter) -----------------------------------


@pytest.mark.parametrize(
    "text, cleaned",
    [
        # a comment opener inside a string is no comment (the regexes blanked the rest)
        ('n = strlen("/*"); buf[n] = 0;', "n = strlen(0   ); buf[n] = 0;"),
        ('url = "http://x"; a[i] = 1;', "url = 0         ; a[i] = 1;"),
        # a quote inside a comment opens no string
        ("a[i] = 1; /* it's */ b[j] = 2;", "a[i] = 1;            b[j] = 2;"),
        ("x = y; // don't\nz[k] = 0;", "x = y; \nz[k] = 0;"),
        ("c = '\"'; d[c] = 1;", "c = 0  ; d[c] = 1;"),
        # a fragment that ends inside a block comment: blanked to the end
        ("p[i] = 0; /* the rest", "p[i] = 0;            "),
        # a macro's body is cleaned too (tree-sitter keeps it as one opaque argument)
        ('#define NAME(x) f(x, "a(b")', "#define NAME(x) f(x, 0    )"),
    ],
)
def test_clean_reads_comments_and_literals_like_a_compiler(text: str, cleaned: str) -> None:
    assert clean(text) == cleaned
