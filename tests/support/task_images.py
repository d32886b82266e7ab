"""Task images made for image-budget tests: distinct images (each its own id, the full size of
the image they copy) under a repository of the test's own, and the tags it holds."""

from __future__ import annotations

import docker


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
