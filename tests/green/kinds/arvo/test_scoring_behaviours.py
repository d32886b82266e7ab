"""Behaviours of the scoring core that mutation testing found unguarded (issue 26): each test
pins one rule of loc.json parsing, ground truth or matching that a broken scorer would break."""

from __future__ import annotations

import pytest

from services.green.kinds.arvo.scoring import score
from services.green.kinds.arvo.scoring.groundtruth import ground_truth_from_patch
from services.green.kinds.arvo.scoring.metrics import path_candidates
from services.green.kinds.arvo.scoring.names import name_from_declaration, split_name
from services.shared.loc import LocJson, normalize_path, parse_loc_json

SRC = b"int alpha(void)\n{\n  return 1;\n}\nint gamma(void)\n{\n  return 3;\n}\n"
ONE = '{"locations": [{"file": "a.c", "function": "f", "line_start": 2, "line_end": 4}]}'


def _sub(file: str, function: str | None, start: int, end: int | None = None) -> LocJson:
    loc = {"file": file, "line_start": start, "line_end": end or start}
    if function is not None:
        loc["function"] = function
    return LocJson.model_validate({"locations": [loc]})


def _mail(n: int, body: str) -> str:
    return (
        f"From {str(n) * 40} Mon Sep 17 00:00:00 2001\nFrom: A <a@b.c>\nSubject: [PATCH] x\n\n"
        f"---\n{body}--\n2.40.0\n\n"
    )


# --- loc.json ---------------------------------------------------------------------------------


@pytest.mark.parametrize("raw", [ONE, ONE.encode(), ('{"reasoning": "é", ' + ONE[1:]).encode()])
def test_valid_loc_json_parses_from_text_and_bytes(raw):
    loc, errors = parse_loc_json(raw)
    assert errors == [] and loc is not None
    assert (loc.locations[0].file, loc.locations[0].line_start, loc.locations[0].line_end) == (
        "a.c",
        2,
        4,
    )


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        (b"\xff{}", "loc.json is not UTF-8: 'utf-8' codec can't decode byte 0xff in position 0"),
        ('{"locations": [}', "loc.json is not valid JSON: Expecting value (line 1, column 16)"),
        ("[]", "(top level): Input should be a valid dictionary or instance of LocJson"),
        ('{"locations": []}', "locations: List should have at least 1 item after validation"),
        ('{"locations": [{"line_start": 1, "line_end": 1}]}', "locations.0.file: Field required"),
        (
            '{"locations": [{"file": "a.c", "line_start": 5, "line_end": 3}]}',
            "locations.0: Value error, line_end (3) is before line_start (5)",
        ),
    ],
)
def test_loc_json_errors_say_where(raw, error):
    loc, errors = parse_loc_json(raw)
    assert loc is None and len(errors) == 1 and errors[0].startswith(error), errors


# --- paths ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "project", "expected"),
    [
        ("/src/proj//lib/x.c", "proj", "lib/x.c"),
        ("./src-vul/proj/lib/x.c", "proj", "lib/x.c"),
        ("/src/x.c", None, "x.c"),
        ("/src/proj/lib/x.c", None, "lib/x.c"),
        ("workspace/src-vul/proj/a/b.c", "proj", "a/b.c"),
        ("/workspace/src-vul/proj/a/b.c", "proj", "a/b.c"),
        ("lib/x.c:42:7", "proj", "lib/x.c"),
        ("lib/x.c:42", "proj", "lib/x.c"),
        ("/src/other/x.c", "proj", "other/x.c"),
        ("/src/proj", "proj", ""),
        ("`lib\\x.c`", None, "lib/x.c"),
        ("a/./b/../c.c", None, "a/c.c"),
        ("/src//proj/lib/x.c", "proj", "lib/x.c"),
        ("/src/ proj/x.c", "proj", " proj/x.c"),
        (".", None, ""),
        ("./", None, ""),
        ("a/..", None, ""),
    ],
)
def test_path_normalisation(path, project, expected):
    assert normalize_path(path, project) == expected


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        # a root path already lost its project folder: never strip a second one
        ("/src/proj/proj/x.c", ["proj/x.c"]),
        ("./src-vul/proj/proj/x.c", ["proj/x.c"]),
        ("`/src/proj/proj/x.c`", ["proj/x.c"]),
        ("\\src\\proj\\proj\\x.c", ["proj/x.c"]),
        # a relative path may start with the project folder, or be a folder of that name
        ("proj/x.c", ["proj/x.c", "x.c"]),
        ("./proj/x.c", ["proj/x.c", "x.c"]),
        ("lib/x.c", ["lib/x.c"]),
    ],
)
def test_path_candidates(path, expected):
    assert path_candidates(path, "proj") == expected


def test_ground_truth_file_at_the_repository_root():
    gt = ground_truth_from_patch(
        "--- a/parser.c\n+++ b/parser.c\n@@ -3 +3 @@\n-  return 1;\n+  return 2;\n",
        sources={"parser.c": SRC},
    )
    for file in ("parser.c", "/src/proj/parser.c", "./parser.c", "src-vul/proj/parser.c"):
        m = score(_sub(file, "alpha", 3), gt, "proj").metrics()
        assert (m["file@1"], m["func@1"], m["line@1"]) == (1.0, 1.0, 1.0), file


# --- ground truth -----------------------------------------------------------------------------

TWO_HUNKS = (
    "--- a/m.c\n+++ b/m.c\n@@ -3 +3 @@\n-  return 1;\n+  return 2;\n"
    "@@ -7 +7 @@\n-  return 3;\n+  return 4;\n"
)


def test_every_changed_function_of_a_file_is_kept():
    gt = ground_truth_from_patch(TWO_HUNKS, sources={"m.c": SRC})
    f = gt.files[0]
    assert f.lines == [3, 7]
    assert [(x.qualified, x.start_line, x.end_line) for x in f.functions] == [
        ("alpha", 1, 4),
        ("gamma", 5, 8),
    ]
    assert [r.function.qualified for r in f.regions] == ["alpha", "gamma"]


@pytest.mark.parametrize(
    ("written", "credited"),
    [
        ("alpha, gamma", 1.0),
        ("gamma, alpha", 1.0),
        ("alpha or delta", 1.0),
        ("delta or alpha", 1.0),
        ("delta, epsilon", 0.0),
    ],
)
def test_function_field_naming_several_functions(written, credited):
    gt = ground_truth_from_patch(
        "--- a/m.c\n+++ b/m.c\n@@ -3 +3 @@\n-  return 1;\n+  return 2;\n", sources={"m.c": SRC}
    )
    assert score(_sub("m.c", written, 3), gt).metrics()["func@1"] == credited


def test_insertion_anchors_follow_a_hunk_offset():
    src = b"/* a */\n/* b */\n" + SRC  # the patch was made without the two comment lines
    patch = "--- a/m.c\n+++ b/m.c\n@@ -2,2 +2,3 @@\n {\n+  x();\n   return 1;\n"
    gt = ground_truth_from_patch(patch, sources={"m.c": src})
    assert gt.files[0].lines == [4, 5] and "hunk-offset" in gt.flags
    assert [f.qualified for f in gt.files[0].functions] == ["alpha"]


def test_latin1_source_is_read():
    src = "int alpha(void)\n{\n  /* caf\xe9 */\n  return 1;\n}\n".encode("latin-1")
    patch = "--- a/a.c\n+++ b/a.c\n@@ -4 +4 @@\n-  return 1;\n+  return 2;\n"
    gt = ground_truth_from_patch(patch, sources={"a.c": src})
    assert gt.files[0].lines == [4] and [f.qualified for f in gt.files[0].functions] == ["alpha"]
    assert gt.flags == []


def test_missing_source_falls_back_to_the_hunk_header(tmp_path):
    patch = "--- a/a.c\n+++ b/a.c\n@@ -4 +4 @@ int alpha(void)\n-  return 1;\n+  return 2;\n"
    gt = ground_truth_from_patch(patch, source_root=tmp_path)
    f = gt.files[0]
    assert f.lines == [4] and not f.source_available and "source-missing" in gt.flags
    assert [(x.qualified, x.source) for x in f.functions] == [("alpha", "hunk-header")]


def test_a_file_gaining_content_from_empty_keeps_the_later_files():
    patch = (
        "--- a/e.c\n+++ b/e.c\n@@ -0,0 +1,2 @@\n+int a;\n+int b;\n"
        "--- a/m.c\n+++ b/m.c\n@@ -7 +7 @@\n-  return 3;\n+  return 4;\n"
    )
    gt = ground_truth_from_patch(patch, sources={"e.c": b"", "m.c": SRC})
    assert [(f.path, f.lines) for f in gt.files] == [("m.c", [7])]


def test_zero_context_insertion_keeps_both_anchors():
    patch = "--- a/m.c\n+++ b/m.c\n@@ -2,0 +3 @@\n+  x();\n"
    gt = ground_truth_from_patch(patch, sources={"m.c": SRC})
    assert gt.files[0].lines == [2, 3]
    assert gt.files[0].regions[0].anchor_lines == [2, 3]


def test_file_without_trailing_newline():
    src = b"int alpha(void)\n{\n  return 1;\n}"
    patch = "--- a/n.c\n+++ b/n.c\n@@ -4 +4,2 @@\n-}\n\\ No newline at end of file\n+}\n+int z;\n"
    gt = ground_truth_from_patch(patch, sources={"n.c": src})
    assert gt.files[0].lines == [4] and gt.flags == []
    insertion = "--- a/n.c\n+++ b/n.c\n@@ -4,0 +5 @@\n+int z;\n"
    gt = ground_truth_from_patch(insertion, sources={"n.c": src})
    assert gt.files[0].lines == [4]  # the insertion is at the end: no line after it


# --- multi-commit series ----------------------------------------------------------------------


def test_series_rename_then_modify():
    series = _mail(
        1,
        "diff --git a/m.c b/n.c\nsimilarity index 90%\nrename from m.c\nrename to n.c\n"
        "--- a/m.c\n+++ b/n.c\n@@ -3 +3 @@\n-  return 1;\n+  return 2;\n",
    ) + _mail(
        2, "diff --git a/n.c b/n.c\n--- a/n.c\n+++ b/n.c\n@@ -7 +7 @@\n-  return 3;\n+  return 4;\n"
    )
    gt = ground_truth_from_patch(series, sources={"m.c": SRC})
    f = gt.files[0]
    assert (f.path, f.new_path, f.status, f.lines) == ("m.c", "n.c", "renamed", [3, 7])
    assert [x.qualified for x in f.functions] == ["alpha", "gamma"]
    assert "multi-commit" in gt.flags


def test_series_modify_then_delete():
    deleted = "".join(
        "-" + ln + "\n"
        for ln in [
            "int alpha(void)",
            "{",
            "  return 2;",
            "}",
            "int gamma(void)",
            "{",
            "  return 3;",
            "}",
        ]
    )
    series = _mail(
        1, "diff --git a/m.c b/m.c\n--- a/m.c\n+++ b/m.c\n@@ -3 +3 @@\n-  return 1;\n+  return 2;\n"
    ) + _mail(
        2,
        "diff --git a/m.c b/m.c\ndeleted file mode 100644\n--- a/m.c\n+++ /dev/null\n"
        "@@ -1,8 +0,0 @@\n" + deleted,
    )
    gt = ground_truth_from_patch(series, sources={"m.c": SRC})
    f = gt.files[0]
    assert (f.status, f.new_path, f.lines) == ("deleted", None, list(range(1, 9)))


def test_series_later_commit_edits_lines_an_earlier_one_added():
    series = _mail(
        1, "diff --git a/m.c b/m.c\n--- a/m.c\n+++ b/m.c\n@@ -3,0 +4,2 @@\n+  a();\n+  b();\n"
    ) + _mail(
        2,
        "diff --git a/m.c b/m.c\n--- a/m.c\n+++ b/m.c\n@@ -5 +5 @@\n-  b();\n+  c();\n"
        "@@ -9 +9 @@\n-  return 3;\n+  return 4;\n",
    )
    gt = ground_truth_from_patch(series, sources={"m.c": SRC})
    assert gt.files[0].lines == [3, 4, 7]  # commit 2's line 9 is the old line 7
    assert any("changes line 5, which an earlier commit" in w for w in gt.warnings)


# --- name heuristics --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("int foo(int (*cb)(void), char b[SIZE(2)])", ("foo", "foo")),
        ("void (*signal(int sig, void (*func)(int)))(int)", ("signal", "signal")),
        ("FT_LOCAL_DEF( widget )", None),  # _DEF wraps a return type
        ("FT_EXPORT_DECL( widget )", None),  # _DECL
        ("FT_CALLBACK_TYPE( widget )", None),  # _TYPE
        ("WRAP( size_t )", None),  # a *_t type
        ("WRAP( FT_Error )", None),  # an upper-case type
        ("WRAP( sizeof )", None),  # a keyword
        ("WRAP( parse )", ("parse", "WRAP(parse)")),
        ("WRAP( Parse )", ("Parse", "WRAP(Parse)")),
        ("static WRAP(parse)", ("parse", "WRAP(parse)")),
        ("int WRAP(parse)", ("WRAP", "WRAP")),  # a return type: an ordinary function
        ("virtual int f(int a) = 0", ("f", "f")),
        ("int f(int a = 1)", ("f", "f")),
        ("   ", None),
        ("static void __attribute__((noinline)) zap(void)", ("zap", "zap")),
        ("int __attribute__((cold)) f(int)", ("f", "f")),
        ("static int x = compute(y);", None),
    ],
)
def test_name_heuristics(text, expected):
    assert name_from_declaration(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Foo bar()", ("bar", "bar")),  # the name called, not the first word
        ("ns::Widget::as<char const*>() const", ("as", "ns::Widget::as")),
        ("Widget::operator bool() const", ("operator bool", "Widget::operator bool")),
        ("Box<int>", ("Box", "Box")),
        ("", ("", "")),
        ("()", ("()", "()")),
    ],
)
def test_split_name(text, expected):
    assert split_name(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("run() const::$_0::operator()() const", ("run", "run")),
        ("ns::W::run() const::$_0::operator()(int) const", ("run", "ns::W::run")),
        ("ns::W::run() &::Local::f()", ("run", "ns::W::run")),
        ("ns::f(int)::{lambda(int)#1}::operator()(int) const", ("f", "ns::f")),
        ("ns::W::run() const", ("run", "ns::W::run")),
    ],
)
def test_trace_names_of_local_entities(text, expected):
    assert name_from_declaration(text) == expected


# --- more of what mutation testing found ------------------------------------------------------


@pytest.mark.parametrize(
    ("patch", "ignored"),
    [
        (
            "diff --git a/link.h b/link.h\nindex 1111111..2222222 120000\n--- a/link.h\n"
            "+++ b/link.h\n@@ -1 +1 @@\n-old.h\n\\ No newline at end of file\n+new.h\n"
            "\\ No newline at end of file\n",
            ("link.h", "symlink"),
        ),
        (
            "diff --git a/NEWS b/NEWS\ndeleted file mode 100644\n--- a/NEWS\n+++ /dev/null\n"
            "@@ -1 +0,0 @@\n-x\n",
            ("NEWS", "not a code file"),
        ),
        (
            "diff --git a/a.c b/b.c\nsimilarity index 100%\nrename from a.c\nrename to b.c\n",
            ("a.c", "renamed without content changes"),
        ),
    ],
)
def test_files_without_ground_truth_are_listed_with_the_reason(patch, ignored):
    gt = ground_truth_from_patch(patch)
    assert gt.files == [] and [(i.path, i.reason) for i in gt.ignored] == [ignored]


def test_a_rename_keeps_both_paths():
    patch = (
        "diff --git a/m.c b/n.c\nsimilarity index 90%\nrename from m.c\nrename to n.c\n"
        "--- a/m.c\n+++ b/n.c\n@@ -3 +3 @@\n-  return 1;\n+  return 2;\n"
    )
    f = ground_truth_from_patch(patch, sources={"m.c": SRC}).files[0]
    assert (f.path, f.new_path, f.status) == ("m.c", "n.c", "renamed")


@pytest.mark.parametrize("path", ["/etc/passwd.c", "../outside.c", "a/../../outside.c"])
def test_sources_are_never_read_outside_the_root(tmp_path, path):
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "outside.c").write_bytes(SRC)
    patch = f"--- a/{path}\n+++ b/{path}\n@@ -3 +3 @@\n-  return 1;\n+  return 2;\n"
    gt = ground_truth_from_patch(patch, source_root=root)
    assert all(not f.source_available for f in gt.files)


def test_a_symlink_out_of_the_root_is_not_followed(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "secret.c").write_bytes(SRC)
    (root / "m.c").symlink_to(tmp_path / "secret.c")
    gt = ground_truth_from_patch(TWO_HUNKS, source_root=root)
    assert not gt.files[0].source_available and "source-missing" in gt.flags


def test_sources_over_the_size_limit_are_not_read(tmp_path, monkeypatch):
    import services.green.kinds.arvo.scoring.groundtruth as groundtruth

    (tmp_path / "m.c").write_bytes(SRC)
    assert ground_truth_from_patch(TWO_HUNKS, source_root=tmp_path).files[0].source_available
    monkeypatch.setattr(groundtruth, "MAX_SOURCE_BYTES", len(SRC) - 1)
    assert not ground_truth_from_patch(TWO_HUNKS, source_root=tmp_path).files[0].source_available


def test_hunk_header_of_a_moved_hunk_names_a_function_outside_the_source():
    """Lines outside every function, in a hunk found 2 lines lower: the header's function (one
    the parsers did not find) is kept with the moved lines."""
    src = b"/* a */\n/* b */\nstatic const int table[] = {\n  1,\n  2,\n};\n"
    patch = "--- a/t.c\n+++ b/t.c\n@@ -2,2 +2,2 @@ int mystery(void)\n   1,\n-  2,\n+  3,\n"
    gt = ground_truth_from_patch(patch, sources={"t.c": src})
    f = gt.files[0]
    assert f.lines == [5] and "hunk-offset" in gt.flags
    assert [(x.qualified, x.source) for x in f.functions] == [("mystery", "hunk-header")]


def test_a_region_gets_the_function_holding_most_of_its_lines():
    patch = "--- a/m.c\n+++ b/m.c\n@@ -4,4 +4,1 @@\n-}\n-int gamma(void)\n-{\n-  return 3;\n+}\n"
    gt = ground_truth_from_patch(patch, sources={"m.c": SRC})
    region = gt.files[0].regions[0]
    assert (region.start, region.end, region.function.qualified) == (4, 7, "gamma")


def test_insertion_before_the_last_line_of_a_file_without_trailing_newline():
    src = b"int alpha(void)\n{\n  return 1;\n}"
    gt = ground_truth_from_patch(
        "--- a/n.c\n+++ b/n.c\n@@ -3,0 +4 @@\n+  x();\n", sources={"n.c": src}
    )
    assert gt.files[0].lines == [3, 4]


def test_series_of_three_commits_maps_through_both_earlier_ones():
    body = "diff --git a/m.c b/m.c\n--- a/m.c\n+++ b/m.c\n"
    series = (
        _mail(1, body + "@@ -1,0 +2 @@\n+/* one */\n")
        + _mail(2, body + "@@ -3,0 +4 @@\n+/* two */\n")
        + _mail(
            3, body + "@@ -4 +4 @@\n-/* two */\n+/* 2 */\n@@ -9 +9 @@\n-  return 3;\n+  return 4;\n"
        )
    )
    gt = ground_truth_from_patch(series, sources={"m.c": SRC})
    assert gt.files[0].lines == [1, 2, 3, 7]  # commit 3's line 9 is the old line 7
    assert any("changes line 4, which an earlier commit" in w for w in gt.warnings)


# --- source loading and moved insertions (survivors of the second mutation run) ---------------


def test_a_text_source_with_escaped_bytes_reads_like_the_bytes():
    """A source handed over as text decoded with ``surrogateescape`` (a byte that is not UTF-8)
    gives the same ground truth as the bytes themselves, and does not crash."""
    raw = b"int alpha(void)\n{\n  /* \xff */\n  return 1;\n}\n"
    patch = "--- a/a.c\n+++ b/a.c\n@@ -4 +4 @@\n-  return 1;\n+  return 2;\n"
    as_text = ground_truth_from_patch(
        patch, sources={"a.c": raw.decode("utf-8", "surrogateescape")}
    )
    as_bytes = ground_truth_from_patch(patch, sources={"a.c": raw})
    for gt in (as_text, as_bytes):
        f = gt.files[0]
        assert f.source_available and f.lines == [4] and gt.flags == []
        assert [x.qualified for x in f.functions] == ["alpha"]


def test_a_dotdot_path_is_not_read_even_when_it_leads_back_into_the_root(tmp_path):
    """``../root/m.c`` names a file inside the root, but a patch path that climbs out is refused
    before the file system is asked (absolute paths never get here: the patch reader strips the
    leading ``/``)."""
    root = tmp_path / "root"
    root.mkdir()
    (root / "m.c").write_bytes(SRC)
    patch = "--- a/../root/m.c\n+++ b/../root/m.c\n@@ -3 +3 @@\n-  return 1;\n+  return 2;\n"
    gt = ground_truth_from_patch(patch, source_root=root)
    assert [f.path for f in gt.files] == ["../root/m.c"] and not gt.files[0].source_available


def test_a_source_of_exactly_the_size_limit_is_read(tmp_path, monkeypatch):
    import services.green.kinds.arvo.scoring.groundtruth as groundtruth

    (tmp_path / "m.c").write_bytes(SRC)
    monkeypatch.setattr(groundtruth, "MAX_SOURCE_BYTES", len(SRC))
    assert ground_truth_from_patch(TWO_HUNKS, source_root=tmp_path).files[0].source_available


def test_hunk_header_of_a_moved_insertion_names_a_function_outside_the_source():
    """An insertion (anchor lines only) outside every function, in a hunk found 2 lines lower:
    the header's function follows the moved anchors."""
    src = b"/* a */\n/* b */\nstatic const int table[] = {\n  1,\n  2,\n};\n"
    patch = "--- a/t.c\n+++ b/t.c\n@@ -2,2 +2,3 @@ int mystery(void)\n   1,\n+  5,\n   2,\n"
    gt = ground_truth_from_patch(patch, sources={"t.c": src})
    f = gt.files[0]
    assert f.lines == [4, 5] and "hunk-offset" in gt.flags
    assert [(x.qualified, x.source) for x in f.functions] == [("mystery", "hunk-header")]


@pytest.mark.parametrize(
    ("insertion", "lines"),
    [
        ("@@ -8,0 +9 @@\n+  y();\n", [3, 7, 8]),  # before the last line: both anchors
        ("@@ -9,0 +10 @@\n+int z;\n", [3, 8]),  # after the last line: no line after it
    ],
)
def test_a_later_insertion_knows_the_length_the_earlier_commit_left(insertion, lines):
    """Commit 1 turns one line into two (8 -> 9 lines); commit 2's zero-context insertion has
    an "after" anchor only if that line exists in the 9-line file."""
    body = "diff --git a/m.c b/m.c\n--- a/m.c\n+++ b/m.c\n"
    series = _mail(1, body + "@@ -3 +3,2 @@\n-  return 1;\n+  return 1;\n+  x();\n") + _mail(
        2, body + insertion
    )
    gt = ground_truth_from_patch(series, sources={"m.c": SRC})
    assert gt.files[0].lines == lines


def test_the_score_names_the_project_it_was_scored_with():
    gt = ground_truth_from_patch(TWO_HUNKS, sources={"m.c": SRC})
    result = score(_sub("/src/proj/m.c", "alpha", 3), gt, project="proj")
    assert result.project == "proj" and result.metrics()["file@1"] == 1


def test_series_rename_then_two_more_commits_on_the_new_path():
    """m.c -> n.c in commit 1; commits 2 and 3 both edit n.c: every line is m.c's (the third
    commit once lost the rename and made n.c a second file without a source)."""
    series = (
        _mail(
            1,
            "diff --git a/m.c b/n.c\nsimilarity index 90%\nrename from m.c\nrename to n.c\n"
            "--- a/m.c\n+++ b/n.c\n@@ -3 +3 @@\n-  return 1;\n+  return 2;\n",
        )
        + _mail(
            2, "diff --git a/n.c b/n.c\n--- a/n.c\n+++ b/n.c\n@@ -7 +7 @@\n-  return 3;\n+  x;\n"
        )
        + _mail(
            3,
            "diff --git a/n.c b/n.c\n--- a/n.c\n+++ b/n.c\n@@ -1 +1 @@\n-int alpha(void)\n+int a;\n",
        )
    )
    gt = ground_truth_from_patch(series, sources={"m.c": SRC})
    assert [(f.path, f.new_path, f.status, f.lines) for f in gt.files] == [
        ("m.c", "n.c", "renamed", [1, 3, 7])
    ]
    assert "source-missing" not in gt.flags
