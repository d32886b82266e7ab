"""Container names by label, for tests that wait for containers to go."""

from __future__ import annotations

from collections.abc import Sequence

import docker


def container_names(client: docker.DockerClient, labels: str | Sequence[str]) -> list[str]:
    """Names of the containers (running or not) that carry every label in ``labels``.

    One list call of the Engine API. docker-py's ``containers.list`` inspects each container it
    lists, so a container removed between the two calls (by the janitor a test is waiting for)
    fails it with a 404."""
    wanted = [labels] if isinstance(labels, str) else list(labels)
    rows = client.api.containers(all=True, filters={"label": wanted})
    return [row["Names"][0].lstrip("/") for row in rows if row.get("Names")]
