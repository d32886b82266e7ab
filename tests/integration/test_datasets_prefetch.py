"""``arena tasks prefetch`` through green with an HTTP asset source (a local HTTP server over
the built fixture assets), and seeded splits: ``--sample N --seed S`` and the run's split.txt."""

from __future__ import annotations

import functools
import re
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

from services.arena.app import app as cli
from services.arena.refs import read_refs
from services.arena.splits import sample
from services.arena.tasks import _size
from services.green.kinds.arvo.datasets.splits import local_ids
from tests.integration.helpers import OPERATOR, OPERATOR_TOKEN
from tests.support import web

pytestmark = pytest.mark.docker


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def asset_server(fixture_assets: Path):
    handler = functools.partial(_Quiet, directory=str(fixture_assets))
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def _cli(*args: str):
    return CliRunner().invoke(
        cli, [*args, "--api-token", OPERATOR_TOKEN], catch_exceptions=False, terminal_width=200
    )


def _flat(text: str) -> str:
    """The output with rich's line wrapping undone."""
    return " ".join(text.split())


def _dry(url: str, ref: str) -> dict:
    r = web.post(
        f"{url}/datasets/prefetch",
        json={"task": ref, "dry_run": True},
        headers=OPERATOR,
        timeout=60,
    )
    assert r.status_code == 200, r.text
    return r.json()


def test_prefetch_over_http_dry_run_then_fetch(
    start_green, asset_server, fixture_assets, docker_client, green_settings
):
    green = start_green(asset_source=asset_server)
    plan = _dry(green.url, "900001")
    sizes = {n: (fixture_assets / "900001" / n).stat().st_size for n in plan["files"]}
    assert {n: f["bytes"] for n, f in plan["files"].items()} == sizes  # HTTP HEAD lengths
    assert not any(f["cached"] for f in plan["files"].values())
    assert plan["download_bytes"] == sum(sizes.values())
    image = docker_client.images.get("arena/arvo:900001-vul")
    assert plan["image"] == {
        "name": "arena/arvo:900001-vul",
        "present": True,
        "bytes": image.attrs["Size"],
    }
    assert _dry(green.url, "99999999")["error"].startswith("the source has no")

    dry = _cli("tasks", "prefetch", "900001", "900002", "--dry-run", "--green", green.url)
    assert dry.exit_code == 0, dry.output
    both = sum(
        docker_client.images.get(f"arena/arvo:{r}-vul").attrs["Size"] for r in ("900001", "900002")
    )
    assert "2 task(s): " in dry.output
    assert f"of assets to download; images: {_size(both)} on the engine" in _flat(dry.output)

    done = _cli("tasks", "prefetch", "900001", "900002", "99999999", "--green", green.url)
    assert done.exit_code == 1, done.output  # the unknown id failed, the others were fetched
    assert "1 failed: arvo:99999999" in _flat(done.output)
    cached = list(Path(green_settings.asset_cache_dir).rglob("repo-vul.tar.gz"))
    assert sorted(p.parent.name for p in cached) == ["900001", "900002"]
    again = _dry(green.url, "900002")  # resumable: nothing left to download
    assert all(f["cached"] for f in again["files"].values()) and again["download_bytes"] == 0

    # An HTTP source cannot list its ids: a sample needs a population file.
    assert _cli("tasks", "sample", "2", "--green", green.url).exit_code == 2


def test_seeded_sample_and_the_runs_split_file(start_green, fixture_assets, tmp_path):
    green = start_green()  # a local asset folder: green lists its ids
    population = local_ids(fixture_assets)
    want = [f"arvo:{i}" for i in sample(population, 3, seed=11)]  # references
    out = _cli("tasks", "sample", "3", "--seed", "11", "--green", green.url)
    assert out.exit_code == 0 and out.output.split() == want
    pop_file = tmp_path / "population.txt"
    pop_file.write_text("\n".join(reversed(population)))
    same = _cli(
        "tasks", "sample", "3", "--seed", "11", "--from", str(pop_file), "--green", green.url
    )
    assert same.output.split() == want  # the listing order does not matter

    dry = _cli(
        "tasks", "prefetch", "--sample", "3", "--seed", "11", "--dry-run", "--green", green.url
    )
    assert dry.exit_code == 0, dry.output
    assert re.findall(r"arvo:\d+", dry.output) == want

    run = _cli(
        "run", "--sample", "2", "--seed", "4", "--green", green.url,
        "--run", "r1", "--out", str(tmp_path), "--poll-interval", "0.2",
    )  # fmt: skip
    # purple is unreachable: the tasks fail, the run ends, and says so (exit 1: none completed)
    assert run.exit_code == 1, run.output
    split = (tmp_path / "r1" / "split.txt").read_text()
    assert read_refs(split) == [f"arvo:{i}" for i in sample(population, 2, seed=4)]
    assert "--sample 2 --seed 4" in split.splitlines()[0]
