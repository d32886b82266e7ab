"""A run's manifest says what produced it, and each fact is checked against its own source: the
client's commit and dirty flag against git, the lock hash against uv.lock, the library versions
against the imported modules, the split seed against ``--seed``, the model's seed and temperature
against the purple that ran, each task's image identity against ``docker image inspect``."""

from __future__ import annotations

import hashlib
import json
import platform
import subprocess

import numpy
import pytest
import scipy
from typer.testing import CliRunner

from fixtures.catalog import REPO_ROOT
from services.arena.app import app
from services.sandbox.docker.images import image_identity
from services.shared.build_info import build_info
from tests.integration.helpers import OPERATOR_TOKEN
from tests.support.fake_llm import FakeReply

pytestmark = [pytest.mark.docker, pytest.mark.slow]

FIX_FILE = {"xmlmini": "src/entity.c", "tgadec": "src/rle.c", "tarlite": "lib/archive.c"}


def _answer(request: dict) -> FakeReply:
    """The model names a file of the task's project (the task text names the project)."""
    text = json.dumps(request["messages"])
    file = next(f for project, f in FIX_FILE.items() if f"src-vul/{project}" in text)
    location = {"file": file, "line_start": 1, "line_end": 1}
    answer = {"locations": [location], "reasoning": "the crash frame"}
    return FakeReply(tool_calls=[("submit_localization", answer)])


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()


def test_the_manifest_names_the_code_the_seeds_and_the_images_truly(
    tmp_path, start_green, llm, llm_purple, docker_client
):
    green = start_green()
    llm.default = _answer
    purple = llm_purple(seed=11, temperature=0.2)
    out = tmp_path / "results"
    args = ["run", "900001", "900002", "900003", "--sample", "2", "--seed", "5"]
    args += ["--green", green.url, "--purple", purple.url, "--run", "m", "--out", str(out)]
    res = CliRunner().invoke(app, [*args, "--poll-interval", "0.2", "--api-token", OPERATOR_TOKEN])
    assert res.exit_code == 0, res.output
    outcomes = json.loads((out / "m" / "results.json").read_text())["tasks"]
    assert [t["status"] for t in outcomes] == ["completed", "completed"], outcomes
    manifest = json.loads((out / "m" / "manifest.json").read_text())

    # the client's own build, each fact from its own source
    arena = manifest["arena"]
    assert arena["commit"] == _git("rev-parse", "HEAD")
    tracked = _git("status", "--porcelain", "--untracked-files=no")
    new_code = _git("status", "--porcelain", "--untracked-files=all", "--", "services")
    assert arena["dirty"] is bool(tracked or new_code)
    lock = hashlib.sha256((REPO_ROOT / "uv.lock").read_bytes()).hexdigest()
    assert arena["lock_sha256"] == lock
    assert arena["python"] == platform.python_version()
    assert (arena["numpy"], arena["scipy"]) == (numpy.__version__, scipy.__version__)
    assert manifest["arena_version"] == arena["version"]  # the older key, still written
    # green ran in this process: its build is this one
    assert manifest["green_builds"] == [{**build_info(), "attempts": 2}]

    # the seeds, apart
    assert manifest["split_seed"] == manifest["seed"] == 5 and manifest["sample"] == 2
    assert manifest["model_seed"] == 11
    (agent,) = manifest["purple_agents"]
    assert agent["url"] == purple.url and agent["attempts"] == 2
    assert agent["policy"] == "react" and len(agent["agent_config"]["sha256"]) == 64
    assert agent["model"] == {
        "model": "fake-model",
        "seed": 11,
        "temperature": 0.2,
        "top_p": None,
        "max_tokens": None,
    }
    assert agent["build"]["commit"] == arena["commit"] and agent["build"]["lock_sha256"] == lock

    # each task's image, by identity and id, as the engine has it
    assert len(manifest["tasks"]) == 2
    for ref, trials in manifest["tasks"].items():
        image = trials["1"]["image"]
        inspect = docker_client.api.inspect_image(f"arena/arvo:{ref.removeprefix('arvo:')}-vul")
        assert image["id"] == inspect["Id"] and image["identity"] == image_identity(inspect)
