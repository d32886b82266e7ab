"""Dataset tools without Docker: crash signatures, seeded splits, the image-tag pattern and the
ground-truth check of verification."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.green.datasets.crash import has_report, mismatch, parse_signature
from services.green.datasets.images import template_pattern
from services.green.datasets.splits import local_ids, read_refs, sample, split_text
from services.green.datasets.verify import ground_truth_problem
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


def test_sample_is_seeded_and_independent_of_the_listing_order():
    population = [str(i) for i in range(1000, 1400)]
    a = sample(population, 25, seed=7)
    assert a == sample(list(reversed(population)) + population[:5], 25, seed=7)
    assert a != sample(population, 25, seed=8)
    assert len(set(a)) == 25 and set(a) <= set(population)
    # Fixed figures: the same selection on every machine and Python version of the project.
    assert sample(["1", "2", "3", "10", "20"], 2, seed=0) == sample(
        ["20", "10", "3", "2", "1"], 2, 0
    )


def test_sample_refuses_impossible_sizes():
    with pytest.raises(ValueError, match="more than the 2"):
        sample(["1", "2"], 3, seed=0)
    with pytest.raises(ValueError, match="at least 1"):
        sample(["1"], 0, seed=0)


def test_split_file_round_trip_and_local_ids(tmp_path: Path):
    text = split_text(["10055", "900001"], "split of run r")
    assert read_refs(text) == ["10055", "900001"]
    assert read_refs("1, 2 # comment\n3\n") == ["1", "2", "3"]
    for name in ("900002", "900001", "notes", "0123"):
        (tmp_path / name).mkdir()
    (tmp_path / "55").write_text("a file")
    assert local_ids(tmp_path) == ["900001", "900002"]


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


def test_report_counts_verified_tasks():
    from services.green.report import RunResults, outcome_from_task
    from services.green.report.render import render_markdown

    def task(ref: str, verified: bool | None) -> dict:
        return {"id": f"t{ref}", "arvo_id": ref, "status": "completed", "verified": verified}

    results = RunResults(run="r", green="http://g")
    results.task_ids = ["1", "2", "3"]
    results.tasks = [outcome_from_task(task("1", True)), outcome_from_task(task("2", False))]
    results.tasks.append(outcome_from_task(task("3", None)))
    text = render_markdown(results, plot=None)
    assert "| verified tasks (arena tasks verify) | 1 |" in text
    assert "| not verified | 1: 2 |" in text and "| never verified | 1 |" in text
    results.tasks = [outcome_from_task(task("3", None))]
    assert "verified" not in render_markdown(results, plot=None)  # green reported none
