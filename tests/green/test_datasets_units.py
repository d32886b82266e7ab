"""Dataset tools without Docker: crash signatures, local task folders, the image-tag pattern and
the ground-truth check of verification."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.green.kinds.arvo.crash import has_report, mismatch, parse_signature
from services.green.kinds.arvo.datasets.images import template_pattern
from services.green.kinds.arvo.datasets.splits import local_ids
from services.green.kinds.arvo.datasets.verify import ground_truth_problem
from services.green.kinds.arvo.judge import PreparedTask
from services.green.kinds.arvo.scoring.groundtruth import ground_truth_from_patch

REPORT = """\
INFO: Seed: 1
Running: /tmp/poc
=================================================================
==13==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x6080 at pc 0x55 bp 0x7f sp 0x7f
READ of size 1 at 0x608000000171 thread T0
    #0 0x55e5cdadd273 in memcpy (/out/xml_fuzzer+0xe0c0e)
    #1 0x55e5cdadd273 in xml_decode_entity /src/xmlmini/src/entity.c:71:13
    #2 0x55e5cdadd451 in xml_unescape /src/xmlmini/src/entity.c:124:22
    #3 0x55e5cdad9a6a in LLVMFuzzerTestOneInput /src/xmlmini/fuzz/xml_fuzzer.c:21:9

0x608000000171 is located 0 bytes to the right of 81-byte region
allocated by thread T0 here:
    #0 0x55e5cda9ec0e in malloc (/out/xml_fuzzer+0xe0c0e)
    #1 0x55e5cdad9a44 in LLVMFuzzerTestOneInput /src/xmlmini/fuzz/xml_fuzzer.c:16:11

SUMMARY: AddressSanitizer: heap-buffer-overflow /src/xmlmini/src/entity.c:71:13 in xml_decode_entity
"""


def test_signature_is_the_summary_class_and_the_first_project_frame():
    sig = parse_signature(REPORT, "xmlmini")
    assert sig is not None
    assert sig.sanitizer_class == "AddressSanitizer: heap-buffer-overflow"
    assert (sig.frame.function, sig.frame.file) == (
        "xml_decode_entity",
        "/src/xmlmini/src/entity.c",
    )
    assert sig.summary_function == "xml_decode_entity"  # the SUMMARY line's "in <function>"
    bare = REPORT.replace(" in xml_decode_entity\n", "\n")
    assert parse_signature(bare, "xmlmini").summary_function == ""
    assert mismatch(sig, parse_signature(REPORT, "xmlmini")) is None


def test_a_frame_only_in_the_allocation_stack_is_not_the_crash_frame():
    text = REPORT.replace("/src/xmlmini/src/entity.c", "/usr/include/x.h")
    sig = parse_signature(text, "xmlmini")
    assert sig.frame.function == "LLVMFuzzerTestOneInput"  # crash stack #3, not malloc's stack


def test_mismatch_names_the_class_and_the_frame():
    expected = parse_signature(REPORT, "xmlmini")
    other_class = parse_signature(
        REPORT.replace("heap-buffer-overflow", "heap-use-after-free"), "xmlmini"
    )
    assert "sanitizer class is AddressSanitizer: heap-use-after-free" in mismatch(
        expected, other_class
    )
    moved = parse_signature(
        REPORT.replace("in xml_decode_entity /src", "in xml_other /src"), "xmlmini"
    )
    why = mismatch(expected, moved)
    assert "top in-project frame is xml_other" in why and "class" not in why


def test_no_summary_no_signature_and_report_detection():
    assert parse_signature("Running: /tmp/poc\nExecuted /tmp/poc in 1 ms\n", "x") is None
    assert not has_report("Executed /tmp/poc in 1 ms\n")
    assert has_report("==1==ERROR: LeakSanitizer: detected memory leaks\n")
    assert has_report("src/a.c:3:5: runtime error: signed integer overflow\n")


def test_local_ids_are_the_folders_named_by_an_arvo_id(tmp_path: Path):
    for name in ("900002", "900001", "notes", "0123", "10055"):
        (tmp_path / name).mkdir()
    (tmp_path / "55").write_text("a file")
    assert local_ids(tmp_path) == ["10055", "900001", "900002"]


def test_template_pattern_matches_only_task_tags():
    pat = template_pattern("n132/arvo:{id}-vul")
    assert pat.match("n132/arvo:10055-vul").group("id") == "10055"
    assert not pat.match("n132/arvo:10055-fix")
    assert not pat.match("x/n132/arvoX10055-vul")
    with pytest.raises(ValueError):
        template_pattern("n132/arvo:latest")


def _prepared(patch: str) -> PreparedTask:
    gt = ground_truth_from_patch(patch.encode())
    return PreparedTask(
        project="p", archive_top="src-vul/p", ground_truth=gt, project_files=frozenset()
    )


CODE_FIX = """\
diff --git a/src/a.c b/src/a.c
--- a/src/a.c
+++ b/src/a.c
@@ -1,3 +1,3 @@
 int f(int x) {
-    return x;
+    return x + 1;
 }
"""


def test_ground_truth_check():
    assert ground_truth_problem(_prepared(CODE_FIX)) is None
    docs_only = CODE_FIX.replace("src/a.c", "README.md")
    assert "changes no code lines" in ground_truth_problem(_prepared(docs_only))
    assert "changes no code lines" in ground_truth_problem(_prepared(""))
