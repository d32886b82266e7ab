"""The reproduce and fix kinds' dataset tools: ARVO's (ids, prefetch, verify) and the checks of
what they judge with.

``arena tasks verify arvo-poc:<id>`` (or ``arvo-fix:<id>``) runs ARVO's verification (the image
reproduces error.txt's crash, patch.diff stops it, the ground truth lies in code), then:

- ``poc``: the task's PoC asset, run on the vulnerable build, crashes as error.txt says (the
  same sanitizer class and top in-project frame);
- ``fixed_build``: the fixed build (the ``-fix`` image, or the fallback) runs the PoC clean;
- ``corpus``: every input of the behaviour corpus runs clean on both builds (a task without a
  corpus passes, saying so: its fix tasks compare behaviour by fuzzing only).

The task images' disk budget stays the ARVO kind's (the same images).
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from services.green.kinds.arvo.builds.runs import InputRun
from services.green.kinds.arvo.builds.task_builds import TaskBuilds
from services.green.kinds.arvo.crash import parse_signature, where
from services.green.kinds.arvo.datasets.service import ArvoDatasets
from services.green.kinds.arvo.datasets.verify import Step
from services.green.kinds.datasets import Verification
from services.green.kinds.errors import AssetError
from services.sandbox.base import SandboxError


@dataclass(frozen=True)
class BuildInputs:
    """What the build checks of one task need (read from its assets by its kind)."""

    builds: TaskBuilds
    poc: bytes
    corpus: dict[str, bytes]
    error_text: str


class BuildDatasets:
    """:class:`~services.green.kinds.datasets.DatasetSupport` of the reproduce and fix kinds."""

    def __init__(
        self,
        arvo: ArvoDatasets,
        arvo_id: Callable[[str], str],
        inputs: Callable[[str], BuildInputs],
    ) -> None:
        """``arvo_id``: the ARVO id of one of the kind's ids; ``inputs``: its build inputs."""
        self.arvo, self.arvo_id, self.inputs = arvo, arvo_id, inputs

    def ids(self) -> list[str] | None:
        return self.arvo.ids()

    def prefetch(self, ref_id: str, dry_run: bool) -> dict[str, Any]:
        return self.arvo.prefetch(self.arvo_id(ref_id), dry_run)

    def verify(self, ref_id: str) -> Verification:
        arvo_id = self.arvo_id(ref_id)
        v = self.arvo.verify(arvo_id)
        started = time.monotonic()
        try:
            inputs = self.inputs(arvo_id)
        except (AssetError, ValueError, OSError) as exc:
            steps = [Step("build_assets", False, 0.0, str(exc))]
        else:
            steps = asyncio.run(check_builds(inputs, f"verify-{arvo_id}-{secrets.token_hex(3)}"))
        v.steps += [vars(s) for s in steps]
        v.seconds = round(v.seconds + time.monotonic() - started, 2)
        bad = [f"{s.name}: {s.detail}" for s in steps if not s.ok]
        if bad:
            v.verified = False
            v.reason = "; ".join([*([v.reason] if v.reason else []), *bad])
        return v


async def check_builds(inputs: BuildInputs, task_id: str) -> list[Step]:
    """The ``poc``, ``fixed_build`` and ``corpus`` checks (an engine failure is a failed step
    naming it, as ARVO's checks report theirs)."""
    steps: list[Step] = []
    t0 = time.monotonic()
    try:
        async with inputs.builds.vulnerable(task_id) as box:
            vul = await box.run(inputs.poc, "poc")
            on_vul = [await box.run(d, n) for n, d in inputs.corpus.items()]
        ok, detail = _poc_verdict(vul, inputs)
        steps.append(Step("poc", ok, _since(t0), detail))
        t0 = time.monotonic()
        async with inputs.builds.fixed(task_id) as (box, which):
            fixed = await box.run(inputs.poc, "poc")
        detail = f"the fixed build ({which.how}) on the PoC: {fixed.verdict()}"
        steps.append(Step("fixed_build", fixed.clean, _since(t0), detail))
        t0 = time.monotonic()
        reference, _ = await inputs.builds.reference(task_id, inputs.corpus)
    except (SandboxError, AssetError) as exc:
        steps.append(Step("builds", False, _since(t0), f"the builds could not be run: {exc}"))
        return steps
    ok, detail = _corpus_verdict(on_vul, reference)
    steps.append(Step("corpus", ok, _since(t0), detail))
    return steps


def _poc_verdict(run: InputRun, inputs: BuildInputs) -> tuple[bool, str]:
    sig = parse_signature(inputs.error_text, inputs.builds.project)
    expected = (sig.sanitizer_class, where(sig.frame)) if sig else (None, None)
    if not run.crashed:
        return False, f"the PoC on the vulnerable build {run.verdict()}"
    if (run.sanitizer, run.frame) != expected:
        return False, f"the PoC {run.verdict()}; error.txt says {expected[0]} in {expected[1]}"
    return True, f"the PoC {run.verdict()}, as error.txt says"


def _corpus_verdict(vul: list[InputRun], fixed: list[InputRun]) -> tuple[bool, str]:
    if not vul:
        return True, "no behaviour corpus (a fix task compares behaviour by fuzzing only)"
    bad = [f"{r.input} on the {r.build} build {r.verdict()}" for r in [*vul, *fixed] if not r.clean]
    return (not bad, "; ".join(bad) if bad else f"{len(vul)} inputs run clean on both builds")


def _since(t0: float) -> float:
    return round(time.monotonic() - t0, 2)
