"""Every kind declares what it is in one KindTraits, read directly: the bug a task is about, the
metrics and what a kind that declares nothing (the needle example) shows."""

from __future__ import annotations

import pytest

from services.green.kinds.metrics import (
    continuous_metrics,
    declared_metrics,
    headline_metrics,
    public_score_keys,
    record_fields,
    secret_asset_names,
)
from services.green.kinds.registry import KINDS, bug_of
from services.green.kinds.traits import KindTraits
from tests.green.kinds.needle.kind import NeedleKind


@pytest.mark.parametrize("cls", [*KINDS.values(), NeedleKind], ids=lambda c: c.name)
def test_every_kind_declares_its_traits_in_one_record(cls):
    assert isinstance(cls.traits, KindTraits)
    for attribute in ("metrics", "public_scores", "secret_assets", "scoring_version", "bug"):
        assert attribute not in vars(cls), f"{cls.name} declares {attribute} beside its traits"


@pytest.mark.parametrize(
    ("kind", "ref_id", "bug"),
    [
        ("arvo", "10055-main", "arvo:10055"),
        ("arvo-poc", "10055-l2", "arvo:10055"),
        ("arvo-fix", "10055", "arvo:10055"),
        ("swebench", "django__django-11099", "swebench:django__django-11099"),
        ("gone", "7", "gone:7"),  # a row of a kind this green no longer registers
    ],
)
def test_the_kinds_that_ask_of_one_bug_name_it_alike(kind, ref_id, bug):
    assert bug_of(kind, ref_id) == bug


def test_a_kind_that_declares_nothing_is_read_as_saying_nothing():
    needle = NeedleKind()
    assert declared_metrics([needle]) is None and headline_metrics(needle) is None
    assert continuous_metrics([needle]) is None  # does not say (swebench says: none)
    assert continuous_metrics([KINDS["swebench"]]) == set()
    assert public_score_keys(needle) == frozenset() and secret_asset_names(needle) == frozenset()
    assert record_fields(needle) is None and needle.traits.scoring_version is None


def test_a_kinds_headline_falls_back_to_its_metrics():
    arvo, fix = KINDS["arvo"], KINDS["arvo-fix"]
    assert headline_metrics(arvo) == ["file@1", "func@1", "line@1"]
    assert headline_metrics(fix) == list(fix.traits.metrics)
    assert public_score_keys(fix) == frozenset(fix.traits.metrics) | {"submitted"}
