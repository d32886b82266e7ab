"""Task images made for engine-pool and image-budget tests: distinct images (each its own id,
the full size of the image they copy) under a repository of the test's own, and the tags it
holds; and a slim copy of a task's image, for tests that push and pull one through a registry."""

from __future__ import annotations

import io

import docker

SLIM_BASE = "arena/python-base:3.11-bookworm"
"""What a slim copy of a task's image is built on: the smallest image setup builds (145 MB)."""

SLIM = """\
FROM {base}
COPY --from={source} /src /src
COPY --from={source} /out /out
COPY --from={source} /bin/arvo /bin/arvo
WORKDIR /src
"""


def slim_copy(client: docker.DockerClient, source: str, template: str, ref: str) -> str:
    """A task's image with its files (``/src``, ``/out``, ``/bin/arvo``) on the smallest base,
    tagged ``template.format(id=ref)``: a task whose commands need no compiler runs the same,
    and a registry pushes and an engine pulls a fifth of the bytes (the ARVO base is 712 MB).
    The engine's build cache makes it once per machine. Returns the tag."""
    tag = template.format(id=ref)
    recipe = SLIM.format(base=SLIM_BASE, source=source).encode()
    client.images.build(fileobj=io.BytesIO(recipe), tag=tag, rm=True, forcerm=True)
    return tag


def copy_image(client: docker.DockerClient, source: str, template: str, ref: str) -> str:
    """Commit a container of ``source`` as ``template.format(id=ref)`` (a label makes the id
    distinct); return that tag."""
    container = client.containers.create(source, command=["true"], network_mode="none")
    try:
        repo, tag = template.format(id=ref).rsplit(":", 1)
        container.commit(repository=repo, tag=tag, changes=[f"LABEL arena.budget.copy={ref}"])
    finally:
        container.remove(force=True)
    return template.format(id=ref)


def present(client: docker.DockerClient, template: str) -> set[str]:
    """The tags of the template's repository, in one call (``images.list`` inspects each image
    after listing, which races with green evicting one meanwhile)."""
    repo = template.split(":", 1)[0]
    return {t for img in client.api.images(name=repo) for t in img.get("RepoTags") or []}


def remove_all(client: docker.DockerClient, template: str) -> None:
    for tag in present(client, template):
        client.images.remove(tag, force=True)
