"""The tests' count of leftover containers survives the janitor removing one meanwhile."""

from __future__ import annotations

import contextlib
import secrets

import docker.errors
import pytest

from tests.integration.conftest import leftover_containers

pytestmark = pytest.mark.docker


def test_a_container_removed_while_it_is_counted_fails_nothing(docker_client, monkeypatch):
    owner = f"leftover-{secrets.token_hex(4)}"
    container = docker_client.containers.create(
        "arena/arvo:900001-vul", ["true"], labels={"arena.managed": "1", "arena.owner": owner}
    )
    real_inspect = docker_client.api.inspect_container

    def janitor_first(container_id, *args, **kwargs):  # removed between listing and reading
        docker_client.api.remove_container(container_id, force=True)
        return real_inspect(container_id, *args, **kwargs)

    try:
        monkeypatch.setattr(docker_client.api, "inspect_container", janitor_first)
        assert leftover_containers(docker_client, owner) == [container.name]  # one list call
        monkeypatch.undo()
        container.remove(force=True)  # the janitor's turn
        assert leftover_containers(docker_client, owner) == []
    finally:
        monkeypatch.undo()
        with contextlib.suppress(docker.errors.NotFound):
            container.remove(force=True)
