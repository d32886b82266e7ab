"""``arena compare`` on real runs of the fixtures: the offline analyst against a deliberately
weaker purple, each run's manifest digests against ``docker image inspect``; a run made against
a rebuild of the same recipe (another image id, the same identity: another machine's build)
compared, and one against an image of another recipe refused with a sentence naming the
task."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from services.arena.app import app
from services.green.kinds.arvo.report_signature import report_signature
from tests.integration.helpers import OPERATOR_TOKEN
from tests.support.scripted_purple import Script
from tests.support.servers import free_port

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TASKS = ["900001", "900002", "900003", "900004", "900005", "900006"]
WRONG = ["src/lexer.c", "src/colormap.c", "lib/header.c"]  # valid files, never the fix
RETAG = "arena-test-i24-retag/arvo:{id}-vul"
CHANGED = "arena-test-i24-changed/arvo:{id}-vul"


def _run(green_url: str, purple: str, out: Path, name: str, ids=TASKS) -> Path:
    args = ["run", *ids, "--green", green_url, "--purple", purple, "--run", name]
    args += ["--out", str(out), "--concurrency", "3", "--poll-interval", "0.2"]
    res = CliRunner().invoke(app, [*args, "--api-token", OPERATOR_TOKEN])
    assert res.exit_code == 0, res.output
    return out / name


@pytest.fixture
def retagged(docker_client):
    """900001's image rebuilt with one more label (the same recipe, another image id: as on
    another machine) and with another recipe label (an image whose recipe changed)."""
    base = docker_client.images.get("arena/arvo:900001-vul")
    images = {}
    for key, template, label in (
        ("same", RETAG, 'arena.test="retagged"'),
        ("changed", CHANGED, 'arena.image.recipe-sha256="0000"'),
    ):
        dockerfile = f"FROM arena/arvo:900001-vul\nLABEL {label}\n".encode()
        images[key], _ = docker_client.images.build(
            fileobj=io.BytesIO(dockerfile), tag=template.format(id="900001"), rm=True
        )
        assert images[key].id != base.id
    yield images
    for image in images.values():
        docker_client.images.remove(image.id, force=True)


def test_compare_analyst_against_a_weaker_purple(
    tmp_path, start_green, scripted_purple, analyst_url, docker_client, retagged, fixture_assets
):
    green = start_green(max_concurrent_tasks=3)
    weak, _ = scripted_purple(
        Script(
            commands=["ls"],
            submissions=[
                {"locations": [{"file": f, "line_start": 1, "line_end": 1}]} for f in WRONG
            ],
        )
    )
    out = tmp_path / "results"
    strong_dir = _run(green.url, analyst_url, out, "analyst")
    weak_dir = _run(green.url, weak, out, "weak")

    # every manifest digest is docker image inspect's
    for run_dir in (strong_dir, weak_dir):
        manifest = json.loads((run_dir / "manifest.json").read_text())
        assert set(manifest["tasks"]) == {f"arvo:{t}" for t in TASKS}  # keyed by reference
        for ref, trials in manifest["tasks"].items():
            arvo_id = ref.removeprefix("arvo:")
            prov = trials["1"]
            inspect = docker_client.api.inspect_image(f"arena/arvo:{arvo_id}-vul")
            assert prov["image"]["id"] == inspect["Id"]
            assert prov["image"]["name"] == f"arena/arvo:{arvo_id}-vul"
            assert prov["scoring"]["version"] and len(prov["ground_truth_sha256"]) == 64
            assert set(prov["assets_sha256"]) >= {"error.txt", "repo-vul.tar.gz", "patch.diff"}
            report = (fixture_assets / arvo_id / "error.txt").read_bytes()
            signed = hashlib.sha256(report_signature(report)).hexdigest()
            assert prov["assets_signature_sha256"] == {"error.txt": signed}
            assert prov["engine"]["version"] == docker_client.version()["Version"]
            assert prov["purple"]["name"] and prov["purple"]["version"]
            assert "model" in prov["purple"]  # the card's model extension (None: no LLM)

    cmp_dir = tmp_path / "cmp"
    res = CliRunner().invoke(
        app, ["compare", str(strong_dir), str(weak_dir), "--out", str(cmp_dir)]
    )
    assert res.exit_code == 0, res.output
    pair = json.loads((cmp_dir / "compare.json").read_text())["pairs"][0]
    assert pair["n_common"] == len(TASKS) and pair["not_compared"] == {}
    f1 = pair["metrics"]["file@1"]
    a_hits = round(f1["a"] * len(TASKS))
    assert a_hits >= 5 and f1["b"] == 0.0  # the weaker purple never names a changed file
    assert f1["difference"]["mean"] == pytest.approx(a_hits / len(TASKS), abs=1e-6)
    d = f1["difference"]
    assert (f1["win"], f1["loss"]) == (a_hits, 0)
    if pair["n_clusters"] == len(TASKS):  # one project per task: the exact McNemar (sign) test
        assert d["p_value"] == pytest.approx(2 * 0.5**a_hits, abs=1e-9)
    # one procedure: the interval excludes 0 exactly when p < 0.05
    assert (d["ci_low"] is not None and d["ci_low"] > 0) == (d["p_value"] < 0.05)
    md = (cmp_dir / "compare.md").read_text()
    assert "| 95% interval | p |" in md and "sign-flip exact" in md

    # the same recipe rebuilt (another image id): compared, by its identity; another recipe:
    # refused, naming the task
    base = json.loads((strong_dir / "manifest.json").read_text())["tasks"]["arvo:900001"]["1"]
    for key, template in (("same", RETAG), ("changed", CHANGED)):
        port = free_port()
        green_retag = start_green(
            image_template=template,
            port=port,
            instance_name=f"retag-{port}",
            database_url=f"sqlite:///{tmp_path}/green-{key}.db",
        )
        retag_dir = _run(green_retag.url, analyst_url, out, key, ids=["900001"])
        prov = json.loads((retag_dir / "manifest.json").read_text())["tasks"]["arvo:900001"]["1"]
        assert prov["image"]["id"] == retagged[key].id != base["image"]["id"]
        assert (prov["image"]["identity"] == base["image"]["identity"]) == (key == "same")
        res = CliRunner().invoke(
            app, ["compare", str(strong_dir), str(retag_dir), "--out", str(tmp_path / key)]
        )
        if key == "same":
            assert res.exit_code == 0, res.output
            pair = json.loads((tmp_path / key / "compare.json").read_text())["pairs"][0]
            assert pair["tasks"] == ["arvo:900001"] and len(pair["not_compared"]) == 5
        else:
            assert res.exit_code == 3
            assert "task arvo:900001 was scored with a different image" in res.output
            assert "task arvo:900002" not in res.output
