"""FLBench's 900 tasks as the named split ``flbench-900``: a seeded slice of it is prefetched and
run like any split, its images pulled through a local registry standing in for ``n132/arvo``
(each task of the slice is a copy of fixture 900001: its assets, and its image pushed under the
real task's name ``n132/arvo:<id>-vul``)."""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path

import docker
import pytest
from typer.testing import CliRunner

from fixtures.catalog import IMAGE_TEMPLATE
from services.arena.app import app as cli
from services.arena.refs import read_refs
from services.arena.splits import named_split, sample
from tests.integration.helpers import OPERATOR_TOKEN
from tests.support.local_registry import LocalRegistry, local_registry  # noqa: F401
from tests.support.scripted_purple import Script
from tests.support.task_images import slim_copy

pytestmark = [pytest.mark.docker, pytest.mark.slow]

REAL_TEMPLATE = "n132/arvo:{id}-vul"
"""Green's default task image: what the registry stands in for."""
SLIM_TEMPLATE = "arena-test/arvo-slim:{id}-vul"
HIT = {"locations": [{"file": "src/entity.c", "line_start": 71, "line_end": 71}]}
"""900001's fixed line (the slice's tasks carry its assets)."""


def _cli(*args: str):
    return CliRunner().invoke(
        cli, [*args, "--api-token", OPERATOR_TOKEN], catch_exceptions=False, terminal_width=200
    )


def test_a_slice_of_flbench_900_prefetches_and_runs_through_a_local_registry(
    tmp_path: Path,
    start_green,
    scripted_purple,
    fixture_assets: Path,
    docker_client: docker.DockerClient,
    local_registry: LocalRegistry,  # noqa: F811
) -> None:
    refs = sample(read_refs(named_split("flbench-900")), 2, seed=50)
    ids = [r.split(":", 1)[1] for r in refs]
    names = [REAL_TEMPLATE.format(id=i) for i in ids]
    for name in names:
        try:
            docker_client.images.get(name)
            pytest.skip(f"{name} is on this engine already: the test would not pull it")
        except docker.errors.ImageNotFound:
            pass
    image = slim_copy(docker_client, IMAGE_TEMPLATE.format(id="900001"), SLIM_TEMPLATE, "900001")
    assets = tmp_path / "assets"
    for i, name in zip(ids, names, strict=True):
        shutil.copytree(fixture_assets / "900001", assets / i)
        local_registry.push(docker_client, image, name)
    purple, observed = scripted_purple(Script(commands=["ls /workspace"], submissions=[HIT]))
    green = start_green(
        asset_source=str(assets),
        image_template=REAL_TEMPLATE,
        docker_registry=local_registry.address,
        purple_url=purple,
    )
    slice_args = ["--split", "flbench-900", "--sample", "2", "--seed", "50", "--green", green.url]
    try:
        fetched = _cli("tasks", "prefetch", *slice_args)
        assert fetched.exit_code == 0, fetched.output
        assert sorted(fetched.output.count(r) for r in refs) == [1, 1]
        for name in names:  # pulled through the registry, tagged back under the real name
            assert docker_client.images.get(name).id == docker_client.images.get(image).id

        out = tmp_path / "results"
        ran = _cli("run", *slice_args, "--run", "flb", "--out", str(out), "--poll-interval", "0.2")
        assert ran.exit_code == 0, ran.output
        results = json.loads((out / "flb" / "results.json").read_text())
        assert sorted(t["ref"] for t in results["tasks"]) == sorted(refs)
        assert read_refs((out / "flb" / "split.txt").read_text()) == refs
        assert results["args"]["split"] == "flbench-900"
        for task in results["tasks"]:
            assert task["status"] == "completed", task
            scores = task["scores"]
            assert scores["file@1"] == scores["line_recall"] == scores["flb_iou_path"] == 1.0
        assert len(observed.task_ids) == 2
    finally:  # the names green pulled, and the ones it tagged back
        for name in [*names, *(f"{local_registry.address}/{n}" for n in names)]:
            with contextlib.suppress(docker.errors.ImageNotFound):
                docker_client.images.remove(name)
