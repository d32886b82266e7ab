"""The crash-frame floor under both metric families: ours (ranked) and FLBench's (set-based).

On FLBench's 900 real ARVO tasks, from a local copy of faultloc-adapter's
``data/eval900.tar.gz`` (900 manifests, each with the task's real sanitizer report
``crash_output``, the developers' fix ``gt_diff`` and the ``project``; never committed here:
fetch it and give its path), without source trees (functions come from hunk headers, hunks
are not moved to the source), and on the bundled fixture tasks (their assets under
``build/assets``, with their source trees, as green scores them). Each task goes through the
kind's own floor function (:func:`services.green.kinds.arvo.floors.floors`: the report reader
and the frame choice in the tree, then the judge), so the figures follow whatever reader the
tree holds. The floor names one location: its ``@5`` metrics equal its ``@1`` ones.

Printed: the mean of each metric over the scorable tasks (an empty ground truth is left out,
as in a run's means), the tasks the floor answers nothing for, and on how many tasks the two
ground truths name the same lines. With ``--faultloc`` (a checkout of faultloc-adapter), the
floor's location of each of the 900 is also scored by FLBench's own scorer (its vendored
``scorer`` package, imported from the checkout, never copied here): on how many tasks its
twelve values equal ours, and which differ.

    uv run --frozen python bench/bench_floor_metrics.py --eval900 /path/to/eval900.tar.gz \
        [--faultloc /path/to/faultloc-adapter]
"""

from __future__ import annotations

import argparse
import json
import sys
import tarfile
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fixtures.catalog import DEFAULT_ASSETS_DIR, load_tasks
from services.green.kinds.arvo.floors import floors
from services.green.kinds.arvo.judge import Judge, PreparedTask
from services.green.kinds.arvo.scoring import GroundTruth, ground_truth_from_patch
from services.green.kinds.arvo.scoring.flbench import FLB_METRICS, FLB_PATH_METRICS

OURS = ("file@1", "line@1", "file@5", "line@5", "iou")
SHOWN = OURS + FLB_METRICS + FLB_PATH_METRICS


def manifests(archive: Path) -> Iterator[dict]:
    """The archive's manifests (``manifests/<id>.json``), in id order."""
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if m.isfile() and m.name.endswith(".json")]
        for m in sorted(members, key=lambda m: int(Path(m.name).stem)):
            f = tar.extractfile(m)
            if f is not None:
                yield json.load(f)


def same_truth(gt: GroundTruth) -> bool:
    """Whether our ground truth and FLBench's name the same (file, line) points."""
    ours = {(f.path, n) for f in gt.files for n in f.lines}
    theirs = {(h.file, n) for h in gt.flb_hunks for n in h.lines}
    return ours == theirs


class Tally:
    def __init__(self, name: str) -> None:
        self.name = name
        self.rows: list[dict[str, float]] = []
        self.unscorable = 0
        self.no_frame = 0
        self.same_truth = 0

    def add(self, floor: dict, gt: GroundTruth) -> None:
        if gt.empty:
            self.unscorable += 1
            return
        self.rows.append(floor["crash_frame"])
        self.no_frame += floor["crash_frame_location"] is None
        self.same_truth += same_truth(gt)

    def means(self) -> dict[str, float]:
        n = len(self.rows) or 1
        return {m: sum(r[m] for r in self.rows) / n for m in SHOWN}


class Parity:
    """The floor's location scored by FLBench's own scorer, beside ours."""

    def __init__(self, checkout: Path) -> None:
        sys.path.insert(0, str(checkout / "src" / "faultloc_adapter"))
        import scorer  # faultloc-adapter's vendored FLBench scorer

        self.scorer = scorer
        self.same = 0
        self.differ: list[str] = []

    def add(self, man: dict, floor: dict) -> None:
        loc = floor["crash_frame_location"]
        hunks = self.scorer.parse_diff(man["gt_diff"])
        if not hunks:
            return
        # loc.json's inclusive line_end is FLBench's exclusive line_end - 1
        spans = (
            [self.scorer.Span(loc["file"], loc["line_start"], loc["line_end"] + 1)] if loc else []
        )
        ours = floor["crash_frame"]
        for suffix, full in (("", False), ("_path", True)):
            theirs = self.scorer.evaluate_sample(spans, hunks, full_path=full)
            names = {**{m: m for m in FLB_METRICS[:5]}, "flb_iou": "iou"}
            if any(abs(ours[m + suffix] - theirs[t]) > 1e-12 for m, t in names.items()):
                files = sorted({h.file for h in hunks})
                self.differ.append(f"{man['local_id']} ({', '.join(files)})")
                return
        self.same += 1

    def summary(self) -> str:
        n = self.same + len(self.differ)
        return f"FLBench's own scorer on the floor: equal on {self.same} of {n} tasks" + (
            "; differ: " + "; ".join(self.differ) if self.differ else ""
        )


def eval900(archive: Path, judge: Judge, tally: Tally, parity: Parity | None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        error_txt = Path(tmp) / "error.txt"
        for man in manifests(archive):
            error_txt.write_bytes(man["crash_output"].encode("utf-8", "surrogateescape"))
            gt = ground_truth_from_patch(man["gt_diff"])
            prepared = PreparedTask(
                project=man["project"],
                archive_top=f"src-vul/{man['project']}",
                ground_truth=gt,
                project_files=frozenset(),
            )
            floor = floors(error_txt, prepared, judge)
            tally.add(floor, gt)
            if parity is not None:
                parity.add(man, floor)


def bundled(ids: Iterable[Path], judge: Judge, tally: Tally) -> None:
    for task in ids:
        prepared = judge.prepare(task / "patch.diff", task / "repo-vul.tar.gz")
        tally.add(floors(task / "error.txt", prepared, judge), prepared.ground_truth)


def table(tallies: list[Tally]) -> str:
    lines = [
        "| tasks | n | " + " | ".join(SHOWN) + " | no frame | same ground truth |",
        "|---|---:|" + "---:|" * (len(SHOWN) + 2),
    ]
    for t in tallies:
        means = t.means()
        lines.append(
            f"| {t.name} | {len(t.rows)} | "
            + " | ".join(f"{means[m]:.3f}" for m in SHOWN)
            + f" | {t.no_frame} | {t.same_truth} |"
        )
    unscorable = ", ".join(f"{t.name}: {t.unscorable}" for t in tallies)
    return "\n".join(lines) + f"\n\nleft out (empty ground truth): {unscorable}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--eval900", type=Path, help="faultloc-adapter's data/eval900.tar.gz")
    parser.add_argument("--assets", type=Path, default=DEFAULT_ASSETS_DIR)
    parser.add_argument("--faultloc", type=Path, help="a faultloc-adapter checkout (parity)")
    args = parser.parse_args()
    judge = Judge()
    tallies = []
    parity = Parity(args.faultloc) if args.faultloc and args.eval900 else None
    if args.eval900:
        tallies.append(Tally("FLBench eval900 (no sources)"))
        eval900(args.eval900, judge, tallies[-1], parity)
    tasks = [args.assets / str(t.id) for t in load_tasks()]  # the bundled tasks, not broken ones
    tasks = [p for p in tasks if (p / "patch.diff").is_file()]
    if tasks:
        tallies.append(Tally("bundled tasks"))
        bundled(tasks, judge, tallies[-1])
    if not tallies:
        parser.error("nothing to measure: give --eval900, or build the fixtures' assets")
    print(table(tallies))
    if parity is not None:
        print(parity.summary())


if __name__ == "__main__":
    main()
