"""FLBench's metrics (``scoring/flbench.py``) equal an independent reading of FLBench's
definitions, on the bundled tasks' real fixes and the scorer's patch corpus.

The reference below is written from the definitions alone, deliberately another way: it reads
the patch text line by line (each hunk ended by the counts of its ``@@`` header), expands every
span to its points and counts sets, where the scorer reads unidiff's hunks and merges intervals.
Predictions are given to it in FLBench's own format (``line_end`` exclusive), to the scorer as
loc.json locations (``line_end`` inclusive).
"""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from services.green.kinds.arvo.scoring import ground_truth_from_patch, score
from services.green.kinds.arvo.scoring.flbench import (
    ALL_FLB_METRICS,
    FLB_METRICS,
    flb_metrics,
)
from services.green.kinds.arvo.scoring.metrics import METRICS
from services.shared.loc import Location, LocJson
from services.shared.scores import BESIDE, headline

ROOT = Path(__file__).resolve().parents[4]
PATCHES = sorted(ROOT.glob("fixtures/arvo/9*/fix.patch")) + sorted(
    (Path(__file__).parent / "data/patches").glob("*.diff")
)

# --- the reference: FLBench's definitions, as point sets ------------------------------------

HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,(\d+))? @@")


def reference_hunks(text: str, files: set[str]) -> list[tuple[str, set[int]]]:
    """(file, ground-truth lines) per hunk: its deleted lines, else the last context line before
    its first '+'; hunks without either are dropped; only hunks of ``files``."""
    out: list[tuple[str, set[int]]] = []
    lines = text.replace("\r\n", "\n").split("\n")
    current = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            path = line[4:].split("\t")[0].strip()
            current = None if path == "/dev/null" else path.removeprefix("a/")
            i += 2
            continue
        m = HEADER.match(line)
        if not m:
            i += 1
            continue
        old_left = int(m.group(2) or 1)
        new_left = int(m.group(3) or 1)
        old_no = int(m.group(1))
        deleted: set[int] = set()
        before_plus: list[int] = []
        plus_seen = False
        i += 1
        while i < len(lines) and (old_left > 0 or new_left > 0):
            body = lines[i]
            i += 1
            if body.startswith("\\"):
                continue
            tag = body[:1] or " "
            if tag == "-":
                deleted.add(old_no)
                old_no += 1
                old_left -= 1
            elif tag == "+":
                plus_seen = True
                new_left -= 1
            else:
                if not plus_seen:
                    before_plus.append(old_no)
                old_no += 1
                old_left -= 1
                new_left -= 1
        truth = deleted or set(before_plus[-1:])
        if current in files and truth:
            out.append((current, truth))
    return out


def reference_scores(predicted: list[dict], hunks, full_path: bool) -> dict[str, float]:
    """FLBench's six over point sets; ``predicted`` in FLBench's format ([start, end))."""

    def norm(p: str) -> str:
        parts = [x for x in p.split("/") if x not in ("", ".")]
        out: list[str] = []
        for x in parts:
            if x == ".." and out and out[-1] != "..":
                out.pop()
            elif not (x == ".." and p.startswith("/") and not out):
                out.append(x)
        return "/".join(out)

    gt_paths = {norm(f) for f, _ in hunks}

    def ident_gt(p: str) -> str:
        return norm(p) if full_path else p.split("/")[-1]

    def ident_pred(p: str) -> str:
        if not full_path:
            return p.split("/")[-1]
        q = norm(p)
        if q in gt_paths:
            return q
        named = [g for g in gt_paths if (q + "/").endswith("/" + g + "/") and q != g]
        named += [g for g in gt_paths if g.endswith("/" + q)]
        return named[0] if len(set(named)) == 1 else q

    points = {
        (ident_pred(s["file"]), n) for s in predicted for n in range(s["line_start"], s["line_end"])
    }
    truth = {(ident_gt(f), n) for f, lines in hunks for n in lines}
    if not truth:
        return dict.fromkeys(FLB_METRICS, 0.0)
    both = truth & points
    files = {ident_gt(f) for f, _ in hunks}
    named = {ident_pred(s["file"]) for s in predicted}
    r = len(both) / len(truth)
    p = len(both) / len(points) if points else 0.0
    return {
        "file_recall": len(files & named) / len(files),
        "hunk_recall": sum(any((ident_gt(f), n) in points for n in ls) for f, ls in hunks)
        / len(hunks),
        "line_recall": r,
        "line_precision": p,
        "line_f1": 2 * p * r / (p + r) if p + r else 0.0,
        "flb_iou": len(both) / len(truth | points),
    }


# --- crafted predictions --------------------------------------------------------------------


def crafted(
    hunks: list[tuple[str, set[int]]], rng: random.Random
) -> list[list[tuple[str, int, int]]]:
    """Predictions (file, first line, last line: inclusive) of every shape the definitions
    have to get right."""
    files = sorted({f for f, _ in hunks})
    all_lines = {f: sorted(set().union(*(ls for g, ls in hunks if g == f))) for f in files}
    preds: list[list[tuple[str, int, int]]] = []
    exact = [(f, n, n) for f, ls in hunks for n in sorted(ls)]
    preds.append(exact)  # every ground-truth line
    preds.append(exact[:1])  # one line of one hunk
    preds.append([(f, n + 1, n + 1) for f, _, n in exact])  # the line after (our anchor too)
    preds.append([(f, max(1, n - 1), n - 1 or 1) for f, _, n in exact])  # the line before
    for f in files:  # one span crossing every hunk of the file
        preds.append([(f, all_lines[f][0], all_lines[f][-1])])
        preds.append([(f, max(1, all_lines[f][0] - 3), all_lines[f][-1] + 3)])
    preds.append(exact + exact)  # duplicates: a set
    preds.append(exact + [(f, n, n + 4) for f, n, _ in exact])  # overlapping spans
    for f in files:
        base = f.rsplit("/", 1)[-1]
        n = all_lines[f][0]
        preds.append([(f"elsewhere/{base}", n, n)])  # basename collision with a non-GT file
        preds.append([(base, n, n)])  # bare basename
        preds.append([(f"/src/proj/{f}", n, n)])  # rooted deeper
        preds.append([(f"src-vul/proj/{f}", n, n + 2)])
        preds.append([(f"./{f}", n, n), (f"{f}", n, n)])  # two spellings of one file
        preds.append([(f"proj/../{f}", n, n)])  # '..' in the path
        preds.append([(f, 100_000, 100_050)])  # out of range: past the end of the file
        preds.append([(f, n, n), (f, 200_000, 200_000)])
        preds.append([(f"{f}.orig", n, n)])  # another file
    preds.append([("README", 1, 10), ("src/nothing.c", 5, 5)])  # nothing right
    for _ in range(6):  # random sets: ground-truth files, their basename twins, other files
        names = [*files, *(f"x/{f.rsplit('/', 1)[-1]}" for f in files), "other.c"]
        spans = []
        for _ in range(rng.randint(1, 8)):
            f = rng.choice(names)
            top = max(all_lines.get(f, [40])) + 20
            start = rng.randint(1, top)
            spans.append((f, start, start + rng.randint(0, 30)))
        preds.append(spans)
    return preds


def _cases():
    rng = random.Random(50)
    for patch in PATCHES:
        text = patch.read_text()
        gt = ground_truth_from_patch(text)
        hunks = reference_hunks(text, {f.path for f in gt.files})
        if not hunks:
            continue
        for i, spans in enumerate(crafted(hunks, rng)):
            yield pytest.param(text, spans, id=f"{patch.parent.name}/{patch.name}-{i}")


CASES = list(_cases())


def test_the_corpus_is_large_and_has_every_shape():
    assert len(CASES) >= 200
    shapes = set()
    for patch in PATCHES:
        text = patch.read_text()
        gt = ground_truth_from_patch(text)
        hunks = gt.flb_hunks
        shapes |= {"insertion-only"} if any(h.addition_only for h in hunks) else set()
        shapes |= {"multi-file"} if len({h.file for h in hunks}) > 1 else set()
        names = [f.path.rsplit("/", 1)[-1] for f in gt.files]
        shapes |= {"basename collision"} if len(names) > len(set(names)) else set()
    assert shapes == {"insertion-only", "multi-file", "basename collision"}


@pytest.mark.parametrize(("text", "spans"), CASES)
def test_flbench_metrics_equal_the_reference(text, spans):
    gt = ground_truth_from_patch(text)
    hunks = reference_hunks(text, {f.path for f in gt.files})
    assert [(h.file, set(h.lines)) for h in gt.flb_hunks] == hunks
    ours = score(
        LocJson(locations=[Location(file=f, line_start=s, line_end=e) for f, s, e in spans]),
        gt,
        "proj",
    )
    flbench_format = [{"file": f, "line_start": s, "line_end": e + 1} for f, s, e in spans]
    for suffix, full in (("", False), ("_path", True)):
        expected = reference_scores(flbench_format, hunks, full)
        got = {m: getattr(ours, m + suffix) for m in FLB_METRICS}
        assert got == expected, (suffix, spans)


@pytest.mark.parametrize("patch", PATCHES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_empty_and_missing_predictions_score_zero(patch):
    gt = ground_truth_from_patch(patch.read_text())
    assert flb_metrics([], gt.flb_hunks) == dict.fromkeys(ALL_FLB_METRICS, 0.0)
    s = score(None, gt, "proj")
    assert {m: getattr(s, m) for m in ALL_FLB_METRICS} == dict.fromkeys(ALL_FLB_METRICS, 0.0)


# --- the definitions on hand-worked examples ------------------------------------------------

COLLISION = (Path(__file__).parent / "data/patches/basename_collision.diff").read_text()


def _flb(gt, *spans: tuple[str, int, int]) -> dict[str, float]:
    return flb_metrics([Location(file=f, line_start=s, line_end=e) for f, s, e in spans], gt)


def test_ground_truth_of_the_collision_patch():
    gt = ground_truth_from_patch(COLLISION)
    got = [(h.file, h.lines, h.addition_only) for h in gt.flb_hunks]
    assert got == [
        ("include/dav1d/picture.h", [43], False),
        ("src/picture.h", [54], True),  # the last context line before the insertion
        ("src/picture.h", [63], False),
    ]
    # ours anchors both sides of the insertion (54 and 55)
    assert gt.file("src/picture.h").lines == [54, 55, 63]


def test_basenames_merge_the_two_files_and_paths_keep_them_apart():
    gt = ground_truth_from_patch(COLLISION).flb_hunks
    # the public header's line 43, named in the private one: FLBench credits it
    m = _flb(gt, ("src/picture.h", 43, 43))
    assert m["file_recall"] == 1.0  # one basename, named
    assert m["hunk_recall"] == 1 / 3 and m["line_recall"] == 1 / 3 and m["flb_iou"] == 1 / 3
    assert m["file_recall_path"] == 0.5 and m["line_recall_path"] == 0.0
    # a bare basename names two ground-truth paths: by path it names neither
    m = _flb(gt, ("picture.h", 63, 63))
    assert m["line_recall"] == 1 / 3 and m["line_recall_path"] == 0.0
    # rooted deeper, it names one
    m = _flb(gt, ("/src/dav1d/src/picture.h", 63, 63))
    assert m["line_recall_path"] == 1 / 3 and m["hunk_recall_path"] == 1 / 3


def test_a_span_crossing_hunks_is_one_set_of_lines():
    gt = ground_truth_from_patch(COLLISION).flb_hunks
    m = _flb(gt, ("src/picture.h", 54, 65), ("include/dav1d/picture.h", 43, 43))
    # 13 predicted lines, 3 ground-truth lines, all found
    assert m["line_recall_path"] == 1.0 and m["hunk_recall_path"] == 1.0
    assert m["line_precision_path"] == 3 / 13
    assert m["flb_iou_path"] == 3 / 13
    assert m["line_f1_path"] == pytest.approx(2 * (3 / 13) / (1 + 3 / 13))


def test_inclusive_spans_become_flbench_half_open_ones():
    gt = ground_truth_from_patch(COLLISION).flb_hunks
    # loc.json 43..43 is FLBench's [43, 44): one line, the right one
    assert _flb(gt, ("include/dav1d/picture.h", 43, 43))["line_precision_path"] == 1.0
    # 42..43 is [42, 44): two lines
    assert _flb(gt, ("include/dav1d/picture.h", 42, 43))["line_precision_path"] == 0.5


def test_a_huge_span_is_counted_without_expanding_it():
    gt = ground_truth_from_patch(COLLISION).flb_hunks
    m = _flb(gt, ("src/picture.h", 1, 2_000_000_000))
    assert m["line_recall_path"] == 2 / 3
    assert m["line_precision_path"] == 2 / 2_000_000_000


def test_a_fix_flbench_cannot_anchor_scores_zero_with_a_sentence():
    text = (Path(__file__).parent / "data/patches/insert_at_file_edges.diff").read_text()
    gt = ground_truth_from_patch(text)
    assert not gt.empty and gt.flb_hunks == []  # '+' before any context line, then only '+'
    s = score(LocJson(locations=[Location(file="lib/util.c", line_start=1, line_end=6)]), gt)
    assert s.file_at_1 == 1.0 and s.file_recall == 0.0
    assert any("FLBench: its rule finds no ground-truth line" in e for e in s.explanation)


def test_narrow_views_leave_flbench_to_the_full_tables():
    assert set(ALL_FLB_METRICS) == BESIDE
    assert headline(METRICS) == ["file@1", "func@1", "line@1", "iou"]
