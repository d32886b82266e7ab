"""What judging a reproduce input and a fix patch costs, against one run of the task's PoC.

For each bundled fixture (all, or ``--ids``): the **baseline** is one fresh judging container of
the task image and one ``arvo`` run of the task's PoC in it (what any judgement pays at least),
then the **reproduce** judgement of the PoC (the vulnerable build, then the fixed build: its
``-fix`` image or the fallback), and the **fix** judgement of the task's own patch twice: cold
(the fixed build's corpus behaviour not cached yet; for a task without a ``-fix`` image, its
fallback build already made by the reproduce judgement) and warm (cached). Each is printed in
seconds and as a ratio to the baseline measured in the same run, per task and as medians.

    ARENA_FIXTURE_IMAGES=... .venv/bin/python bench/bench_judge.py [--ids 900001 900002] \
        [--fuzz-runs 2000]

Needs the fixtures built (``python -m fixtures.build``) and a Docker engine.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fixtures.catalog import DEFAULT_ASSETS_DIR, FIX_IMAGE_TEMPLATE, IMAGE_TEMPLATE, load_tasks
from services.green.config import GreenSettings
from services.green.kinds.arvo.fix.judge import FixPatch
from services.green.kinds.arvo.fix.kind import ArvoFixKind
from services.green.kinds.arvo.poc.judge import PocInput
from services.green.kinds.arvo.poc.kind import ArvoPocKind
from services.sandbox.docker import DockerSandboxProvider


async def one(ref: str, poc_kind: ArvoPocKind, fix_kind: ArvoFixKind) -> dict[str, float]:
    assets = DEFAULT_ASSETS_DIR / ref
    poc, patch = (assets / "poc").read_bytes(), (assets / "patch.diff").read_text()
    poc_plan = await asyncio.to_thread(poc_kind.prepare, ref)
    fix_plan = await asyncio.to_thread(fix_kind.prepare, ref)
    poc_plan.task_id = fix_plan.task_id = f"bench-judge-{ref}"
    out: dict[str, float] = {}
    t0 = time.perf_counter()
    async with poc_plan.builds.vulnerable(poc_plan.task_id) as box:
        run = await box.run(poc, "poc")
    out["baseline"] = time.perf_counter() - t0
    assert run.crashed, run.verdict()
    t0 = time.perf_counter()
    score = await poc_plan.score(PocInput.of(poc))
    out["reproduce"] = time.perf_counter() - t0
    assert score.fix_distinguishes == 1.0, score.explanation
    for label in ("fix (cold)", "fix (warm)"):
        t0 = time.perf_counter()
        fixed = await fix_plan.score(FixPatch(patch=patch, files=[]))
        out[label] = time.perf_counter() - t0
        assert fixed.resolved == 1.0, fixed.explanation
    return out


async def main(ids: list[str], fuzz_runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        settings = GreenSettings(
            asset_source=str(DEFAULT_ASSETS_DIR),
            asset_cache_dir=Path(tmp) / "cache",
            image_template=IMAGE_TEMPLATE,
            fix_image_template=FIX_IMAGE_TEMPLATE,
            database_url=f"sqlite:///{tmp}/bench.db",
            container_memory="1g",
            judge_fuzz_runs=fuzz_runs,
            fix_floor=False,
        )
        provider = DockerSandboxProvider(label_prefix="arena-bench")
        poc_kind = ArvoPocKind.from_settings(settings, provider)
        fix_kind = ArvoFixKind.from_settings(settings, provider)
        rows = {}
        try:
            for ref in ids:
                rows[ref] = await one(ref, poc_kind, fix_kind)
                r = rows[ref]
                print(
                    f"{ref}: baseline {r['baseline']:.2f} s | "
                    + " | ".join(
                        f"{k} {v:.2f} s ({v / r['baseline']:.1f}x)"
                        for k, v in r.items()
                        if k != "baseline"
                    ),
                    flush=True,
                )
        finally:
            await provider.aclose()
    print(f"\nmedians over {len(rows)} tasks (fuzzing: {fuzz_runs} inputs):")
    for key in ("baseline", "reproduce", "fix (cold)", "fix (warm)"):
        secs = statistics.median(r[key] for r in rows.values())
        ratio = statistics.median(r[key] / r["baseline"] for r in rows.values())
        print(f"  {key:<11} {secs:6.2f} s   ratio to the baseline {ratio:5.1f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ids", nargs="*", default=[str(t.id) for t in load_tasks()])
    ap.add_argument("--fuzz-runs", type=int, default=2000)
    args = ap.parse_args()
    asyncio.run(main(args.ids, args.fuzz_runs))
