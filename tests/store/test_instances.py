"""The registry of green replicas on SQLite and on a real PostgreSQL server: a live name is
refused, a dead one is taken over, and of replicas registering one name at once exactly one wins."""

from __future__ import annotations

from datetime import timedelta

import pytest

from services.green.ledger.instances import InstanceClash, InstanceRegistry
from services.green.store.db import make_engine
from services.green.store.models import utcnow
from tests.store.test_queue import race

LEASE = timedelta(seconds=30)


@pytest.fixture
def registry(database_url) -> InstanceRegistry:
    return InstanceRegistry(make_engine(database_url))


def test_a_live_name_is_refused_and_a_dead_one_taken_over(registry: InstanceRegistry):
    t0 = utcnow()
    first = registry.register("green-a", "http://a:9009", now=t0, stale_after=LEASE)
    registry.register("green-b", "http://b:9009", now=t0, stale_after=LEASE)
    with pytest.raises(InstanceClash, match=r"'green-a' is alive \(at http://a:9009"):
        registry.register("green-a", "http://other:9009", now=t0 + LEASE / 2, stale_after=LEASE)
    assert registry.heartbeat("green-a", first.incarnation, t0 + LEASE / 2)
    assert [i.name for i in registry.live(t0 + LEASE, LEASE)] == ["green-a", "green-b"]
    assert [i.name for i in registry.live(t0 + LEASE * 1.2, LEASE)] == ["green-a"]

    later = t0 + LEASE * 2  # green-a stopped heartbeating: it is dead
    second = registry.register("green-a", "http://new:9009", now=later, stale_after=LEASE)
    assert second.incarnation != first.incarnation
    assert not registry.heartbeat("green-a", first.incarnation, later), "the old one must stop"
    assert registry.heartbeat("green-a", second.incarnation, later)
    assert registry.live(later, LEASE)[0].url == "http://new:9009"

    registry.deregister("green-a", first.incarnation)  # a stale incarnation frees nothing
    assert [i.name for i in registry.live(later, LEASE)] == ["green-a"]
    registry.deregister("green-a", second.incarnation)
    registry.register("green-a", "http://again:9009", now=later, stale_after=LEASE)


@pytest.mark.parametrize("taken_before", [False, True], ids=["new-name", "dead-holder"])
def test_replicas_registering_one_name_together_one_wins(registry: InstanceRegistry, taken_before):
    t0 = utcnow()
    if taken_before:
        registry.register("green", "http://dead", now=t0 - LEASE * 3, stale_after=LEASE)

    def register(i: int) -> bool:
        try:
            registry.register("green", f"http://r{i}", now=t0, stale_after=LEASE)
            return True
        except InstanceClash:
            return False

    assert race(6, register).count(True) == 1
