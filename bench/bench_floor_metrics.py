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
ground truths name the same lines.

    uv run --frozen python bench/bench_floor_metrics.py --eval900 /path/to/eval900.tar.gz
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


def eval900(archive: Path, judge: Judge, tally: Tally) -> None:
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
            tally.add(floors(error_txt, prepared, judge), gt)


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
    args = parser.parse_args()
    judge = Judge()
    tallies = []
    if args.eval900:
        tallies.append(Tally("FLBench eval900 (no sources)"))
        eval900(args.eval900, judge, tallies[-1])
    tasks = [args.assets / str(t.id) for t in load_tasks()]  # the bundled tasks, not broken ones
    tasks = [p for p in tasks if (p / "patch.diff").is_file()]
    if tasks:
        tallies.append(Tally("bundled tasks"))
        bundled(tasks, judge, tallies[-1])
    if not tallies:
        parser.error("nothing to measure: give --eval900, or build the fixtures' assets")
    print(table(tallies))


if __name__ == "__main__":
    main()
