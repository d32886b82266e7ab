"""services/shared/startup.py: a service starts with the collector off, and what the start
left is collected once, then frozen."""

from __future__ import annotations

import gc

import pytest

from services.shared.startup import without_gc


class Cycle:
    def __init__(self) -> None:
        self.me = self


def test_the_start_runs_without_the_collector_and_its_garbage_is_freed() -> None:
    frozen = gc.get_freeze_count()
    try:
        with without_gc():
            assert not gc.isenabled()
            kept = [Cycle() for _ in range(10)]
            for _ in range(1000):
                Cycle()  # garbage only a collection frees
            assert sum(isinstance(o, Cycle) for o in gc.get_objects()) >= 1010
        assert gc.isenabled()
        assert sum(isinstance(o, Cycle) for o in gc.get_objects()) == 0  # frozen: not listed
        assert gc.get_freeze_count() >= frozen + 10
        assert all(k.me is k for k in kept)
    finally:
        gc.unfreeze()
    assert sum(isinstance(o, Cycle) for o in gc.get_objects()) == 10  # the garbage is gone


def test_a_failed_start_turns_the_collector_back_on() -> None:
    with pytest.raises(RuntimeError), without_gc():
        raise RuntimeError("the app could not be built")
    assert gc.isenabled()
    gc.unfreeze()
