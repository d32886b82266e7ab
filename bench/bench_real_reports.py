"""How much of the real ARVO reports the one report reader reads (services/shared/sanitizer/).

Input: a local copy of FLBench's ``data/eval900.tar.gz`` (public repository
``JianhongTu/faultloc-adapter``; each ``manifests/<id>.json`` holds the task's real report as
``crash_output``: colour codes, CRLF, as ARVO's database keeps them). Nothing of it is kept in
this repository. Counted over the reports: a crash stack, free and allocation stacks, MSan origin
and stack-object stacks, frame #0, a SUMMARY line, the bug class of UBSan's ``runtime error:``
reports (specific, not ``undefined-behavior``), the classes MSan reports without SUMMARY get,
paths that held ``..`` or ``.``, and the crash-frame floor (green's crash site): none found, a
fuzz-harness frame answered, and a harness frame answered while another project frame was there
(always 0: the rule of services/shared/sanitizer/frame_roles.py). Last, the floor's file@1 and
line@1 against each task's ground truth (green's rule, from ``gt_diff``, no source trees: a hit
is the floor's file among the ground truth's files, and its line among their lines).

    .venv/bin/python bench/bench_real_reports.py /path/to/eval900.tar.gz
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tarfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from services.green.kinds.arvo.scoring.groundtruth import ground_truth_from_patch
from services.shared.sanitizer import SanitizerReport, parse_report
from services.shared.sanitizer.bug_classes import UNDEFINED_BEHAVIOR
from services.shared.sanitizer.frame_roles import (
    crash_site,
    in_harness_file,
    is_runtime_frame,
    is_system_frame,
)

_DOTTED = re.compile(r"/\.\.?/")


def manifests(tarball: Path):
    with tarfile.open(tarball) as tar:
        for member in tar:
            if member.isfile() and member.name.endswith(".json"):
                f = tar.extractfile(member)
                if f is not None:
                    yield json.load(f)


def count(report: SanitizerReport, raw: str, project: str, c: Counter) -> None:
    c["reports"] += 1
    c["colour codes"] += "\x1b[" in raw
    c["a sanitizer report"] += report.sanitizer is not None
    for kind in ("crash", "freed", "allocated", "origin", "stored", "stack_object", "leak"):
        c[f"stack: {kind}"] += report.stack(kind) is not None
    stack = report.crash_stack
    c["frame #0 of the crash stack"] += bool(stack and stack.frames and stack.frames[0].index == 0)
    c["SUMMARY line"] += report.summary is not None
    if report.ub_message is not None:
        c["UBSan runtime error"] += 1
        c["UBSan runtime error with its class"] += report.crash_type != UNDEFINED_BEHAVIOR
    if report.sanitizer == "MemorySanitizer" and report.summary is None:
        c["MSan without SUMMARY"] += 1
        c["MSan without SUMMARY with its class"] += report.crash_type is not None
    c["reports with ../ or ./ paths"] += bool(_DOTTED.search(raw))
    site = crash_site(report.site_stack, project)
    if site is None:
        c["floor: no frame"] += 1
        return
    frames = report.site_stack.frames if report.site_stack else []
    others = [
        f
        for f in frames
        if (f.file or "").startswith(f"/src/{project}/")
        and not (is_runtime_frame(f) or is_system_frame(f) or in_harness_file(f))
    ]
    if in_harness_file(site):
        c["floor: a harness frame"] += 1
        c["floor: a harness frame, another project frame there"] += bool(others)


def floor_hits(report: SanitizerReport, manifest: dict, c: Counter) -> None:
    """file@1 and line@1 of the crash-frame floor on one task (scorable tasks only)."""
    gt = ground_truth_from_patch((manifest.get("gt_diff") or "").encode())
    if gt.empty:
        return
    c["floor: scorable tasks"] += 1
    project = manifest.get("project") or ""
    site = crash_site(report.site_stack, project)
    if site is None or not site.file:
        return
    path = site.file.removeprefix(f"/src/{project}/")
    truth = gt.file(path)
    c["floor: file@1"] += truth is not None
    c["floor: line@1"] += truth is not None and site.line in truth.lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tarball", type=Path, help="a local copy of FLBench's data/eval900.tar.gz")
    args = ap.parse_args(argv)
    c: Counter = Counter()
    classes: Counter = Counter()
    for m in manifests(args.tarball):
        raw = m.get("crash_output") or ""
        report = parse_report(raw)
        count(report, raw, m.get("project") or "", c)
        floor_hits(report, m, c)
        classes[report.bug_class] += 1
    n, scorable = c["reports"], c["floor: scorable tasks"]
    for key, value in c.items():
        of = scorable if key in ("floor: file@1", "floor: line@1") else n
        print(f"{key:58} {value:4d}  ({value / of:.1%})" if of else f"{key} {value}")
    print("bug classes:", ", ".join(f"{k} {v}" for k, v in classes.most_common()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
