"""Green's dataset tools over the kinds: a kind reaches them only through the protocol of
services/green/kinds/datasets.py; one that offers none, or cannot here, gets a sentence naming
it; verifications of every kind are stored and read alike (SQLite, migrated)."""

from __future__ import annotations

import pytest

from services.green.assessments.dataset_tools import DatasetTools, NotOffered
from services.green.config import GreenSettings
from services.green.kinds.datasets import (
    DatasetContext,
    DatasetsUnavailable,
    DatasetSupport,
    ImageSupport,
    Verification,
)
from services.green.store.db import make_engine
from services.shared.task_ref import TaskRef


class Plain:
    """A kind with no dataset tools (only what TaskKind needs matters here: nothing)."""


class Counting:
    """Offers dataset tools: verified when the id is even."""

    def __init__(self) -> None:
        self.verified: list[str] = []

    def datasets(self, context: DatasetContext) -> Counting:
        return self

    def ids(self) -> list[str]:
        return ["1", "2"]

    def prefetch(self, ref_id: str, dry_run: bool) -> dict:
        return {"ref": ref_id, "dry_run": dry_run}

    def verify(self, ref_id: str) -> Verification:
        self.verified.append(ref_id)
        ok = int(ref_id) % 2 == 0
        return Verification("img", "sha256:ab", ok, None if ok else "odd", [{"name": "even"}], 0.1)


class NeedsEngine:
    def datasets(self, context: DatasetContext) -> DatasetSupport:
        raise DatasetsUnavailable("they need green's Docker engine")


@pytest.fixture
def tools(tmp_path) -> tuple[DatasetTools, Counting]:
    counting = Counting()
    kinds = {"plain": Plain(), "counting": counting, "needs": NeedsEngine()}
    settings = GreenSettings(database_url=f"sqlite:///{tmp_path}/g.db")
    context = DatasetContext(settings, sandboxes=None, engine=make_engine(settings.database_url))  # type: ignore[arg-type]
    return DatasetTools(kinds, context), counting  # type: ignore[arg-type]


def test_a_kind_that_offers_none_or_cannot_here_gets_a_sentence_naming_it(tools):
    dt, _ = tools
    assert dt.offered() == ["counting"]
    with pytest.raises(NotOffered, match="'plain' offers no dataset tools") as none:
        dt.ids("plain")
    assert none.value.status == 404
    with pytest.raises(
        NotOffered, match="needs kind's dataset tools: they need green's Docker"
    ) as e:
        dt.verify(TaskRef("needs", "1"))
    assert e.value.status == 503
    with pytest.raises(NotOffered, match="does not serve the task kind 'other'"):
        dt.prefetch(TaskRef("other", "1"), True)
    with pytest.raises(NotOffered, match="'counting' keeps no task images under a budget"):
        dt.images("counting")
    assert not isinstance(tools[1], ImageSupport) and dt.task_end_hooks() == []


def test_verifications_of_every_kind_are_stored_per_kind_and_read_back(tools):
    dt, counting = tools
    assert dt.ids("counting") == ["1", "2"]
    assert dt.prefetch(TaskRef("counting", "2"), True) == {"ref": "2", "dry_run": True}
    row = dt.verify(TaskRef("counting", "2"))
    assert (row.kind, row.ref, row.verified, row.steps) == (
        "counting",
        "2",
        True,
        [{"name": "even"}],
    )
    dt.verify(TaskRef("counting", "3"))
    assert counting.verified == ["2", "3"]
    found = dt.latest([TaskRef("counting", "2"), TaskRef("counting", "3"), TaskRef("arvo", "2")])
    assert {ref: v.verified for ref, v in found.items()} == {
        TaskRef("counting", "2"): True,
        TaskRef("counting", "3"): False,
    }  # the same id of another kind is another task
    assert found[TaskRef("counting", "3")].reason == "odd"
