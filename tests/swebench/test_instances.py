"""Instance records, loading from files (and the optional Hugging Face path), selection, image
names, predictions files."""

from __future__ import annotations

import builtins
import json
from pathlib import Path

import pytest

from fixtures.swebench.build import INSTANCES_FILE
from services.swebench.instances import (
    DEFAULT_IMAGE_TEMPLATE,
    DatasetUnavailable,
    SweInstance,
    docker_compatible_id,
    image_name,
    load_instances,
    select,
)
from services.swebench.predictions import (
    load_predictions,
    prediction,
    write_predictions,
)

RECORD = {
    "instance_id": "astropy__astropy-12907",
    "repo": "astropy/astropy",
    "base_commit": "d16bfe05a744909de4b27f5875fe0d4ed41ce607",
    "problem_statement": "Modeling's separability_matrix does not compute separability correctly",
    "patch": "diff --git a/x.py b/x.py\n",
    "test_patch": "diff --git a/t/test_x.py b/t/test_x.py\n",
    "FAIL_TO_PASS": '["astropy/modeling/tests/test_separable.py::test_separable[compound_model6-result6]"]',
    "PASS_TO_PASS": "[]",
    "version": "4.3",
    "environment_setup_commit": "298ccb478e6bf092953bca67a3d29dc6c35f6752",
    "hints_text": "",
    "created_at": "2022-03-03T15:14:54Z",
    "difficulty": "15 min - 1 hour",
}


def test_test_lists_arrive_as_json_text_or_lists() -> None:
    a = SweInstance.model_validate(RECORD)
    b = SweInstance.model_validate({**RECORD, "FAIL_TO_PASS": ["t::a", "t::b"], "PASS_TO_PASS": ""})
    assert a.FAIL_TO_PASS == [
        "astropy/modeling/tests/test_separable.py::test_separable[compound_model6-result6]"
    ]
    assert a.PASS_TO_PASS == [] and b.FAIL_TO_PASS == ["t::a", "t::b"] and b.PASS_TO_PASS == []
    assert a.model_extra == {"difficulty": "15 min - 1 hour"}  # unknown fields are kept
    with pytest.raises(ValueError, match="not a JSON list"):
        SweInstance.model_validate({**RECORD, "FAIL_TO_PASS": "[oops"})
    c = SweInstance.model_validate({**RECORD, "version": 0.12, "hints_text": None})
    assert c.version == "0.12" and c.hints_text == ""


def test_load_jsonl_json_list_and_json_object(tmp_path: Path) -> None:
    second = {**RECORD, "instance_id": "django__django-11099", "repo": "django/django"}
    (tmp_path / "a.jsonl").write_text(json.dumps(RECORD) + "\n\n" + json.dumps(second) + "\n")
    (tmp_path / "b.json").write_text(json.dumps([RECORD, second]))
    (tmp_path / "c.json").write_text(json.dumps({r["instance_id"]: r for r in (RECORD, second)}))
    for name in ("a.jsonl", "b.json", "c.json"):
        got = load_instances(tmp_path / name)
        assert [i.instance_id for i in got] == ["astropy__astropy-12907", "django__django-11099"]
    with pytest.raises(DatasetUnavailable, match="cannot read"):
        load_instances(tmp_path / "missing.jsonl")
    (tmp_path / "bad.json").write_text('{"x": 1}')
    with pytest.raises(DatasetUnavailable, match="expected a list"):
        load_instances(tmp_path / "bad.json")
    (tmp_path / "bad2.jsonl").write_text('{"instance_id": "x"}\n')
    with pytest.raises(DatasetUnavailable, match="not SWE-bench instances"):
        load_instances(tmp_path / "bad2.jsonl")


def test_selection_by_ids_regex_and_slice() -> None:
    items = [
        SweInstance.model_validate({**RECORD, "instance_id": f"org__repo-{n}"}) for n in range(6)
    ]
    ids = lambda xs: [i.instance_id for i in xs]  # noqa: E731
    assert ids(select(items, ids=["org__repo-4", "org__repo-1"])) == ["org__repo-1", "org__repo-4"]
    assert ids(select(items, filter_re=r"-[0-2]$")) == ["org__repo-0", "org__repo-1", "org__repo-2"]
    assert ids(select(items, slice_spec="2")) == ["org__repo-0", "org__repo-1"]
    assert ids(select(items, slice_spec="1:5:2")) == ["org__repo-1", "org__repo-3"]
    assert ids(select(items, slice_spec="-1:")) == ["org__repo-5"]
    with pytest.raises(KeyError, match="org__nope-1"):
        select(items, ids=["org__nope-1"])
    with pytest.raises(ValueError, match="invalid slice"):
        select(items, slice_spec="a:b")


def test_hugging_face_without_datasets_is_a_clear_error(monkeypatch) -> None:
    real_import = builtins.__import__

    def no_datasets(name, *args, **kwargs):
        if name == "datasets":
            raise ImportError("No module named 'datasets'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_datasets)
    with pytest.raises(DatasetUnavailable, match=r"princeton-nlp/SWE-bench_Verified.*datasets"):
        load_instances("verified")
    with pytest.raises(DatasetUnavailable, match="SWE-bench_Lite"):
        load_instances("lite")


def test_official_image_names() -> None:
    assert docker_compatible_id("django__django-11099") == "django_1776_django-11099"
    assert (
        image_name("astropy__astropy-12907")
        == "swebench/sweb.eval.x86_64.astropy_1776_astropy-12907:latest"
    )
    assert (
        image_name("Org__Repo-1", "reg.example/sweb.eval.x86_64.{id}:v2")
        == "reg.example/sweb.eval.x86_64.org_1776_repo-1:v2"
    )
    own = SweInstance.model_validate({**RECORD, "image_name": "mine:1"})
    assert image_name(own) == "mine:1"  # the instance's own image...
    assert image_name(own, DEFAULT_IMAGE_TEMPLATE).startswith("swebench/")  # ...unless a template


def test_fixture_instances_file() -> None:
    instances = load_instances(INSTANCES_FILE)
    assert [i.instance_id for i in instances] == [
        "arena__iniparse-1",
        "arena__semver-1",
        "arena__wraptext-1",
    ]
    raw = [json.loads(line) for line in INSTANCES_FILE.read_text().splitlines()]
    assert all(isinstance(r["FAIL_TO_PASS"], str) for r in raw)  # as the dataset has them
    for inst in instances:
        assert (
            inst.image_name
            == f"arena/sweb.eval.x86_64.{docker_compatible_id(inst.instance_id)}:latest"
        )
        assert inst.patch.startswith("diff --git") and inst.test_patch.startswith("diff --git")
        assert inst.FAIL_TO_PASS and inst.PASS_TO_PASS and len(inst.base_commit) == 40
        assert "tests/" not in inst.patch and "tests/" in inst.test_patch


def test_predictions_roundtrip(tmp_path: Path) -> None:
    preds = {
        "b__b-2": prediction("b__b-2", "gpt-x", "diff --git a/y b/y\n"),
        "a__a-1": prediction("a__a-1", "gpt-x", ""),
    }
    write_predictions(tmp_path / "preds.json", preds)
    data = json.loads((tmp_path / "preds.json").read_text())
    assert list(data) == ["a__a-1", "b__b-2"]  # an object keyed by id, as SWE-agent writes it
    assert data["b__b-2"] == {
        "instance_id": "b__b-2",
        "model_name_or_path": "gpt-x",
        "model_patch": "diff --git a/y b/y\n",
    }
    assert load_predictions(tmp_path / "preds.json") == preds
    (tmp_path / "list.json").write_text(json.dumps(list(preds.values())))
    assert load_predictions(tmp_path / "list.json") == preds
    write_predictions(tmp_path / "preds.jsonl", preds)
    assert len((tmp_path / "preds.jsonl").read_text().splitlines()) == 2
    assert load_predictions(tmp_path / "preds.jsonl") == preds
    assert load_predictions(tmp_path / "none.json") == {}
    (tmp_path / "bad.json").write_text('[{"model_patch": ""}]')
    with pytest.raises(ValueError, match="without instance_id"):
        load_predictions(tmp_path / "bad.json")


def test_fixture_instances_file_is_current(tmp_path: Path) -> None:
    """instances.jsonl is what the fixture sources give (else: python -m
    fixtures.swebench.build --jsonl-only), and the record is deterministic."""
    from fixtures.swebench.build import dataset_record, load_specs, make_testbed

    records = [dataset_record(make_testbed(s, tmp_path / s.path.name)) for s in load_specs()]
    lines = [json.loads(line) for line in INSTANCES_FILE.read_text().splitlines()]
    assert records == lines
