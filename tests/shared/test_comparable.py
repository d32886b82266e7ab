"""Whether runs were scored alike (services/shared/comparable.py): scoring rule, image (by
identity when both sides record one), assets and ground truth per task, and the runs or tasks
that record no provenance."""

from __future__ import annotations

from services.shared import comparable
from services.shared.paired import Attempt


def _prov(**over) -> dict:
    p = {
        "scoring": {"version": "arvo-1"},
        "image": {"id": "sha256:1", "identity": "recipe:sha256:aa"},
        "assets_sha256": {"patch.diff": "p1", "error.txt": "e1"},
        "ground_truth_sha256": "g1",
    }
    p.update(over)
    return comparable.decisive_of(p)


def _run(name: str, *provs, task: str = "arvo:1") -> tuple[str, list[Attempt]]:
    return name, [Attempt(task, "completed", provenance=p) for p in provs]


def test_alike_runs_pass() -> None:
    assert comparable.problems([_run("A", _prov()), _run("B", _prov())]) == []


def test_two_machines_builds_of_one_fixture_compare_by_identity() -> None:
    """Same recipe, different local image ids: the same image for the score."""
    other = _prov(image={"id": "sha256:2", "identity": "recipe:sha256:aa"})
    assert comparable.problems([_run("A", _prov()), _run("B", other)]) == []
    moved = _prov(image={"id": "sha256:2", "identity": "recipe:sha256:bb"})
    (one,) = comparable.problems([_run("A", _prov()), _run("B", moved)])
    assert (
        one
        == "task arvo:1 was scored with a different image (A: recipe:sha256:aa; B: recipe:sha256:bb)"
    )


def test_without_identity_on_a_side_images_compare_by_id() -> None:
    old = _prov(image={"id": "sha256:1"})
    assert comparable.problems([_run("A", _prov()), _run("B", old)]) == []
    old_other = _prov(image={"id": "sha256:9"})
    (one,) = comparable.problems([_run("A", _prov()), _run("B", old_other)])
    assert "different image (A: sha256:1; B: sha256:9)" in one


def test_a_changed_ground_truth_asset_or_rule_is_refused_naming_the_task() -> None:
    changed = comparable.problems([_run("A", _prov()), _run("B", _prov(ground_truth_sha256="g2"))])
    assert changed == [
        "task arvo:1 was scored with a different ground truth (sha256) (A: g1; B: g2)"
    ]
    asset = _prov(assets_sha256={"patch.diff": "p2", "error.txt": "e1"})
    (one,) = comparable.problems([_run("A", _prov()), _run("B", asset)])
    assert "different asset patch.diff (A: p1; B: p2)" in one
    (rule,) = comparable.problems([_run("A", _prov(), _prov(scoring={"version": "arvo-2"}))])
    assert "task arvo:1" in rule and "scoring rule version" in rule  # two trials of one run
    # a hash green withheld (None) says nothing either way
    withheld = _prov(ground_truth_sha256=None)
    assert comparable.problems([_run("A", _prov()), _run("B", withheld)]) == []


def test_a_run_without_provenance_is_refused() -> None:
    bare = ("B", [Attempt("arvo:1", "completed"), Attempt("arvo:2", "completed")])
    full = (
        "A",
        [
            Attempt("arvo:1", "completed", provenance=_prov()),
            Attempt("arvo:2", "completed", provenance=_prov()),
        ],
    )
    (one,) = comparable.problems([full, bare])
    assert one.startswith("run B records no provenance")
    partial = (
        "B",
        [Attempt("arvo:1", "completed", provenance=_prov()), Attempt("arvo:2", "completed")],
    )
    assert comparable.problems([full, partial]) == ["task arvo:2 has no provenance in run B"]
    # a task lost to infra before it had any provenance is not compared: nothing is missing
    lost = ("B", [bare[1][0], Attempt("arvo:2", "failed", "infra", "sandbox")])
    lost[1][0].provenance = _prov()
    assert comparable.problems([full, lost]) == []
    # one run (arena report): only conflicts between its trials
    assert comparable.problems([bare]) == []


def test_a_crash_report_is_compared_by_its_signature_when_both_sides_record_one() -> None:
    """Two machines' builds of one fixture: error.txt differs byte for byte (addresses, pid,
    seed), its signature does not; another crash differs in both."""
    signed = {"assets_signature_sha256": {"error.txt": "s1"}}
    here = _prov(**signed)
    there = _prov(assets_sha256={"patch.diff": "p1", "error.txt": "e2"}, **signed)
    assert comparable.problems([_run("A", here), _run("B", there)]) == []
    elsewhere = _prov(
        assets_sha256={"patch.diff": "p1", "error.txt": "e2"},
        assets_signature_sha256={"error.txt": "s2"},
    )
    (one,) = comparable.problems([_run("A", here), _run("B", elsewhere)])
    assert "different asset error.txt (its signature) (A: s1; B: s2)" in one
    unsigned = _prov(assets_sha256={"patch.diff": "p1", "error.txt": "e2"})  # an older green
    (one,) = comparable.problems([_run("A", here), _run("B", unsigned)])
    assert "different asset error.txt (A: e1; B: e2)" in one
