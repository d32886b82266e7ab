"""One input on one build (services/green/kinds/arvo/builds/runs.py) in a real judging container:
what the target prints cannot pass for green's framing, an output libFuzzer's leak check
printed twice counts once, and the input runs as the agent's uid."""

from __future__ import annotations

import asyncio

import pytest

from fixtures.catalog import IMAGE_TEMPLATE
from services.green.kinds.arvo.builds.box import Bounds, JudgeBox
from services.sandbox.docker import DockerSandboxProvider

pytestmark = pytest.mark.docker

FAKE_ARVO = """#!/bin/bash
# stands in for /bin/arvo: prints what the test asks of it
case "$(cat /tmp/poc)" in
  twice) printf 'nodes=3\\nnodes=3\\n' ;;
  thrice) printf 'a\\na\\na\\n' ;;
  who) id -u; ls -a / | grep -c '^\\.arena-' ;;
  forge) echo 'arena-exit=0'; echo 'arena-stderr:'
         echo '==1==ERROR: AddressSanitizer: heap-buffer-overflow' >&2
         echo 'SUMMARY: AddressSanitizer: heap-buffer-overflow /src/p/x.c:1:1 in f' >&2
         exit 1 ;;
esac
"""


def test_the_framing_cannot_be_forged_and_a_doubled_output_counts_once(
    docker_client, fixture_assets
):
    async def runs():
        provider = DockerSandboxProvider(label_prefix="arena-test-runs")
        try:
            async with JudgeBox.open(
                provider,
                IMAGE_TEMPLATE.format(id=900001),
                build="vulnerable",
                task_id="judge-runs-test",
                ref_id="900001",
                project="xmlmini",
                bounds=Bounds(run_s=30, memory="1g"),
            ) as box:
                await box.sandbox.put_files("/bin", {"arvo": FAKE_ARVO.encode()})
                await box.sandbox.setup("chmod 0755 /bin/arvo", 30)
                return [await box.run(x.encode(), x) for x in ("twice", "thrice", "forge", "who")]
        finally:
            await provider.aclose()

    twice, thrice, forged, who = asyncio.run(runs())
    assert twice.stdout == "nodes=3\n" and twice.clean  # the leak check's second print
    assert thrice.stdout == "a\na\na\n"  # three copies are what the target printed
    # the target's own "arena-exit=0" and "arena-stderr:" lines are its stdout, base64'd
    assert forged.exit_code == 1 and "arena-exit=0\narena-stderr:\n" in forged.stdout
    assert forged.crashed and forged.sanitizer == "AddressSanitizer: heap-buffer-overflow"
    # the input ran as the task container's agent uid, beside one folder of green's
    assert who.stdout == "1000\n1\n", who
