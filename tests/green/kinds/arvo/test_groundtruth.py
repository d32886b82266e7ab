"""Ground truth from real-world-shaped patches (made with git from tests/green/kinds/arvo/data/gt_project)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from services.green.kinds.arvo.scoring.groundtruth import (
    GroundTruth,
    ground_truth_from_patch,
    is_code_file,
    is_test_path,
)

DATA = Path(__file__).parent / "data"
PROJECT = DATA / "gt_project"
PATCHES = DATA / "patches"


def patch(name: str) -> str:
    return (PATCHES / name).read_text(encoding="utf-8", errors="surrogateescape")


def summary(gt: GroundTruth) -> dict:
    """{path: {"lines": [...], "regions": [(start, end, kind, function or None, source)]}}"""
    return {
        f.path: {
            "lines": f.lines,
            "status": f.status,
            "regions": [
                (
                    r.start,
                    r.end,
                    r.kind,
                    r.function.qualified if r.function else None,
                    r.function.source if r.function else None,
                )
                for r in f.regions
            ],
        }
        for f in gt.files
    }


def ignored(gt: GroundTruth) -> dict[str, str]:
    return {i.path: i.reason for i in gt.ignored}


TS, HEUR, HUNK = "tree-sitter", "heuristic", "hunk-header"

# (patch file, expected files with the vulnerable source, expected ignored (reason prefix), flags)
CASES = [
    pytest.param(
        "multi_file_format_patch.diff",
        {
            "include/parse.h": {
                "lines": [8, 9],  # a field inserted after line 8: anchored at 8 and 9
                "status": "modified",
                "regions": [(8, 9, "insertion", None, None)],  # inside a struct: no function
            },
            "lib/render.cc": {
                "lines": [12],
                "status": "modified",
                "regions": [(12, 12, "changed", "demo::Grid::at", TS)],
            },
            "src/parse.c": {
                "lines": [20, 38, 39, 59],
                "status": "modified",
                "regions": [
                    (20, 20, "changed", "dup_field", TS),  # pointer-returning function
                    (38, 39, "insertion", "tt_face_load_cmap", TS),  # FT_LOCAL_DEF( int ) macro
                    (59, 59, "changed", "parse_header", HEUR),  # #ifdef with unbalanced braces
                ],
            },
        },
        {
            "ChangeLog": "not a code file",
            "fuzz/fuzz_parse.c": "test/fuzzing code",
            "tests/test_parse.c": "test/fuzzing code",
        },
        [],
        id="format-patch-multi-file-with-tests-and-changelog",
    ),
    pytest.param(
        "rename.diff",
        {
            "src/old_name.c": {
                "lines": [5],
                "status": "renamed",
                "regions": [(5, 5, "changed", "legacy_alloc", TS)],
            }
        },
        {},
        [],
        id="renamed-file-uses-old-path",
    ),
    pytest.param(
        "deleted_file.diff",
        {
            "src/obsolete.c": {
                "lines": list(range(1, 10)),
                "status": "deleted",
                "regions": [(1, 9, "changed", "obsolete_one", TS)],
            },
            "src/util.c": {
                "lines": [5],
                "status": "modified",
                "regions": [(5, 5, "changed", "util_copy", TS)],
            },
        },
        {},
        [],
        id="deleted-file-counts-all-old-lines",
    ),
    pytest.param(
        "new_file_git_binary.diff",
        {
            "lib/util.c": {
                "lines": [5],
                "status": "modified",
                "regions": [(5, 5, "changed", "lib_util_len", TS)],
            }
        },
        {"src/new_check.c": "new file", "tests/sample.bin": "binary file"},
        [],
        id="new-file-and-git-binary-patch",
    ),
    pytest.param(
        "new_file_binary_differ.diff",
        {
            "lib/util.c": {
                "lines": [5],
                "status": "modified",
                "regions": [(5, 5, "changed", "lib_util_len", TS)],
            }
        },
        {"src/new_check.c": "new file", "tests/sample.bin": "binary file"},
        [],
        id="new-file-and-binary-files-differ",
    ),
    pytest.param(
        "fuzz_only.diff",
        {
            "fuzz/fuzz_parse.c": {
                "lines": [8],
                "status": "modified",
                "regions": [(8, 8, "changed", "LLVMFuzzerTestOneInput", TS)],
            }
        },
        {"ChangeLog": "not a code file"},
        ["test-code-only"],
        id="fuzzer-only-fix-keeps-fuzzer-code",
    ),
    pytest.param(
        "insert_at_file_edges.diff",
        {
            "lib/util.c": {
                "lines": [1, 6],  # before line 1: anchor 1 only; after the last line 6: anchor 6
                "status": "modified",
                "regions": [
                    (1, 1, "insertion", None, None),
                    (6, 6, "insertion", "lib_util_len", TS),
                ],
            }
        },
        {},
        [],
        id="insertions-at-start-and-end-of-file",
    ),
    pytest.param(
        "series_two_commits.diff",
        {
            "src/parse.c": {
                # commit 1 inserts after line 11; commit 2 changes its line 23 = original 21
                "lines": [11, 12, 21],
                "status": "modified",
                "regions": [
                    (11, 12, "insertion", "read_u16", TS),
                    (21, 21, "changed", "dup_field", TS),
                ],
            }
        },
        {},
        ["multi-commit"],
        id="format-patch-series-mapped-back",
    ),
]


@pytest.mark.parametrize(("name", "files", "ignored_files", "flags"), CASES)
def test_ground_truth_with_source(name, files, ignored_files, flags):
    gt = ground_truth_from_patch(patch(name), PROJECT)
    assert summary(gt) == files
    got_ignored = ignored(gt)
    assert set(got_ignored) == set(ignored_files)
    for path, reason in ignored_files.items():
        assert got_ignored[path].startswith(reason), got_ignored[path]
    assert gt.flags == flags
    assert not gt.empty
    assert all(f.source_available for f in gt.files)
    json.dumps(gt.to_dict())  # JSON-serializable for the task store


@pytest.mark.parametrize(("name", "files", "ignored_files", "flags"), CASES)
def test_same_lines_without_source(name, files, ignored_files, flags):
    """The line sets never depend on the source; only the functions do."""
    gt = ground_truth_from_patch(patch(name), None)
    assert {p: f["lines"] for p, f in summary(gt).items()} == {
        p: f["lines"] for p, f in files.items()
    }
    assert set(ignored(gt)) == set(ignored_files)
    assert "source-missing" in gt.flags


def test_hunk_header_fallback_without_source():
    gt = ground_truth_from_patch(patch("multi_file_format_patch.diff"), None)
    parse_c = summary(gt)["src/parse.c"]["regions"]
    # The hunk header names the function *before* the hunk ("read_u16" for a change in
    # dup_field): that is why the source is parsed when it is available.
    assert parse_c == [
        (20, 20, "changed", "read_u16", HUNK),
        (38, 39, "insertion", None, None),  # header "FT_LOCAL_DEF( int )": no name
        (59, 59, "changed", "parse_header", HUNK),
    ]
    render = summary(gt)["lib/render.cc"]["regions"]
    assert render == [(12, 12, "changed", None, None)]  # header "class Grid {" names no function


def test_crlf_patch_gives_the_same_ground_truth():
    text = patch("multi_file_format_patch.diff")
    crlf = text.replace("\n", "\r\n")
    assert "\r\n" in crlf
    assert ground_truth_from_patch(crlf, PROJECT) == ground_truth_from_patch(text, PROJECT)
    assert ground_truth_from_patch(crlf.encode(), PROJECT) == ground_truth_from_patch(text, PROJECT)


@pytest.mark.parametrize("text", ["", "   \n\n", "\r\n", b""])
def test_empty_patch_is_flagged(text):
    gt = ground_truth_from_patch(text, PROJECT)
    assert gt.empty and gt.files == [] and gt.flags == ["empty-patch"]


def test_patch_without_code_changes_is_empty():
    text = patch("multi_file_format_patch.diff")
    only_changelog = text[: text.index("diff --git a/fuzz")]
    gt = ground_truth_from_patch(only_changelog, PROJECT)
    assert gt.empty
    assert gt.flags == ["no-code-changes"]
    assert ignored(gt) == {"ChangeLog": "not a code file"}
    gt = ground_truth_from_patch("From 1234567 Mon Sep 17 00:00:00 2001\nSubject: x\n\nno diff\n")
    assert gt.empty and "no-code-changes" in gt.flags


UTIL_HUNK = """\
--- a/src/util.c
+++ b/src/util.c
@@ -{start},5 +{start},5 @@

 int util_copy(char *dst, const char *src, size_t n)
 {{
-  memcpy(dst, src, n);
+  memmove(dst, src, n);
   return 0;
"""


@pytest.mark.parametrize(
    ("start", "expected", "flag"),
    [(2, [5], None), (5, [5], "hunk-offset"), (1, [5], "hunk-offset")],
)
def test_hunks_at_an_offset_are_moved_where_the_source_matches(start, expected, flag):
    gt = ground_truth_from_patch(UTIL_HUNK.format(start=start), PROJECT)
    assert gt.files[0].lines == expected
    assert gt.files[0].regions[0].function.name == "util_copy"
    assert (flag in gt.flags) if flag else gt.flags == []


def test_hunk_that_does_not_match_the_source_keeps_its_numbers():
    text = UTIL_HUNK.format(start=5).replace("int util_copy", "int util_kopy")
    gt = ground_truth_from_patch(text, PROJECT)
    assert gt.files[0].lines == [8]
    assert "hunk-mismatch" in gt.flags
    assert any("does not match" in w for w in gt.warnings)


def test_plain_diff_u_without_git_headers_and_timestamps():
    text = (
        "diff -ru a/src/util.c b/src/util.c\n"
        "--- a/src/util.c\t2024-01-01 10:00:00.000000000 +0000\n"
        "+++ b/src/util.c\t2024-01-02 10:00:00.000000000 +0000\n"
        "@@ -4,3 +4,3 @@\n"
        " {\n"
        "-  memcpy(dst, src, n);\n"
        "+  memmove(dst, src, n);\n"
        "   return 0;\n"
    )
    gt = ground_truth_from_patch(text, PROJECT)
    assert summary(gt) == {
        "src/util.c": {
            "lines": [5],
            "status": "modified",
            "regions": [(5, 5, "changed", "util_copy", TS)],
        }
    }


def test_zero_context_hunks():
    text = (
        "--- a/lib/util.c\n+++ b/lib/util.c\n"
        "@@ -5 +5 @@ int lib_util_len(const char *s)\n"
        "-  return (int)strlen(s);\n+  return s ? (int)strlen(s) : 0;\n"
        "@@ -6,0 +7,2 @@ int lib_util_len(const char *s)\n"
        "+\n+/* trailer */\n"
    )
    gt = ground_truth_from_patch(text, PROJECT)
    # the -U0 insertion after line 6 (the last line) is anchored at 6 alone
    assert gt.files[0].lines == [5, 6]
    assert [(r.start, r.end, r.kind) for r in gt.files[0].regions] == [(5, 6, "mixed")]
    gt = ground_truth_from_patch(text, None)
    assert gt.files[0].lines == [5, 6]
    assert gt.files[0].regions[0].function.name == "lib_util_len"  # from the hunk header


def test_no_prefix_and_quoted_paths():
    text = (
        'diff --git "a/src/caf\\303\\251.c" "b/src/caf\\303\\251.c"\n'
        "index 1111111..2222222 100644\n"
        '--- "a/src/caf\\303\\251.c"\n'
        '+++ "b/src/caf\\303\\251.c"\n'
        "@@ -1,3 +1,3 @@\n int x;\n-int y;\n+long y;\n int z;\n"
    )
    gt = ground_truth_from_patch(text, None)
    assert [f.path for f in gt.files] == ["src/caf\u00e9.c"]
    assert gt.files[0].lines == [2]


def test_unparseable_file_is_reported_and_the_rest_is_kept():
    text = (
        "diff --git a/src/util.c b/src/util.c\n--- a/src/util.c\n+++ b/src/util.c\n"
        "@@ -2,9 +2,5 @@\n \n int util_copy(char *dst, const char *src, size_t n)\n {\n"
        "-  memcpy(dst, src, n);\n+  memmove(dst, src, n);\n"
        "diff --git a/lib/util.c b/lib/util.c\n--- a/lib/util.c\n+++ b/lib/util.c\n"
        "@@ -5 +5 @@ int lib_util_len(const char *s)\n"
        "-  return (int)strlen(s);\n+  return s ? (int)strlen(s) : 0;\n"
    )
    gt = ground_truth_from_patch(text, PROJECT)
    assert [(f.path, f.lines) for f in gt.files] == [("lib/util.c", [5])]
    assert "parse-error" in gt.flags
    assert ignored(gt)["src/util.c"].startswith("unparseable diff")


def test_sources_mapping_instead_of_a_folder():
    sources = {"src/parse.c": (PROJECT / "src/parse.c").read_bytes()}
    gt = ground_truth_from_patch(patch("multi_file_format_patch.diff"), sources=sources)
    by_path = summary(gt)
    assert by_path["src/parse.c"]["regions"][0][3:] == ("dup_field", TS)
    assert by_path["lib/render.cc"]["regions"][0][3:] == (None, None)  # not provided
    assert "source-missing" in gt.flags


def test_patch_paths_cannot_escape_the_source_root(tmp_path):
    (tmp_path / "secret.c").write_text("int secret(void) { return 1; }\n")
    root = tmp_path / "root"
    root.mkdir()
    text = (
        "--- a/../secret.c\n+++ b/../secret.c\n@@ -1 +1 @@\n-int secret(void) { return 1; }\n+x\n"
    )
    gt = ground_truth_from_patch(text, root)
    assert gt.files[0].source_available is False


def test_tests_kept_when_only_tests_and_non_code_change():
    text = patch("multi_file_format_patch.diff")
    start = text.index("diff --git a/tests/test_parse.c")
    only_tests = text[: text.index("diff --git a/fuzz")] + text[start:]
    gt = ground_truth_from_patch(only_tests, PROJECT)
    assert [f.path for f in gt.files] == ["tests/test_parse.c"]
    assert gt.files[0].is_test and gt.files[0].lines == [6]
    assert gt.files[0].regions[0].function.name == "main"
    assert gt.flags == ["test-code-only"]


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("a/b.c", True),
        ("x.H", True),
        ("lib/render.cc", True),
        ("p.hpp", True),
        ("g.y", True),
        ("tables.inc", True),
        ("ext/opcache/jit/zend_jit_x86.dasc", True),  # php-src: C with DynASM
        ("src/spss/readstat_sav_parse.rl", True),  # Ragel
        ("common/arm/impeg2_format_conv.s", True),
        ("src/x86/ipred16_sse.asm", True),
        ("crypto/chacha-x86_64.S", True),
        ("mrbgems/mruby-io/mrblib/file.rb", True),  # mruby builds its Ruby into the binary
        ("ChangeLog", False),
        ("NEWS", False),
        ("doc/x.md", False),
        ("CMakeLists.txt", False),
        ("configure.ac", False),
        ("Makefile.am", False),
        (".c", False),
        ("meson.build", False),
        ("fuzz/corpus/x.bin", False),
    ],
)
def test_code_file_rule(path, code):
    assert is_code_file(path) is code


@pytest.mark.parametrize(
    ("path", "test"),
    [
        ("tests/a.c", True),
        ("src/test/a.c", True),
        ("Fuzz/a.c", True),
        ("fuzzing/x.cc", True),
        ("oss-fuzz/x.c", True),
        ("src/testing.c", False),
        ("src/tests.c", False),
        ("contest/a.c", False),
        ("src/fuzzer.c", False),
    ],
)
def test_test_path_rule(path, test):
    assert is_test_path(path) is test


def test_ground_truth_round_trips_through_json():
    gt = ground_truth_from_patch(patch("multi_file_format_patch.diff"), PROJECT)
    back = GroundTruth.model_validate(json.loads(json.dumps(gt.to_dict())))
    assert back == gt and back.empty is False


def test_judge_prepares_from_the_archive_without_extracting(tmp_path, monkeypatch):
    """End to end with the asset helpers: the judge reads only the patched files out of
    repo-vul.tar.gz, in one pass, and gets the ground truth an extracted tree gives."""
    import tarfile

    from services.green.kinds.arvo.assets import safe_extract
    from services.green.kinds.arvo.judge import Judge

    tar_path = tmp_path / "repo-vul.tar.gz"
    with tarfile.open(tar_path, "w:gz") as tf:
        tf.add(PROJECT, arcname="src-vul/demo")
    patch_path = PATCHES / "multi_file_format_patch.diff"
    opened: list[object] = []
    real_open = tarfile.open

    def counting_open(*args, **kwargs):
        opened.append(args[0] if args else kwargs.get("name"))
        return real_open(*args, **kwargs)

    monkeypatch.setattr(tarfile, "open", counting_open)
    prepared = Judge().prepare(patch_path, tar_path)
    monkeypatch.undo()
    assert opened == [tar_path]  # the archive is decompressed once
    assert (prepared.archive_top, prepared.project) == ("src-vul/demo", "demo")
    assert prepared.project_files == {
        p.relative_to(PROJECT).as_posix() for p in PROJECT.rglob("*") if p.is_file()
    }
    assert all(f.source_available for f in prepared.ground_truth.files)
    text = patch("multi_file_format_patch.diff")
    root = safe_extract(tar_path, tmp_path / "x")
    assert (
        prepared.ground_truth
        == ground_truth_from_patch(text, root)
        == ground_truth_from_patch(text, PROJECT)
    )
