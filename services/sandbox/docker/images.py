"""Task images on one engine: present, or pulled (through a registry mirror) with progress.

An image absent from an engine is pulled on first use. With a ``registry`` (``host:port`` or
``host:port/path``), ``arena/arvo:900001-vul`` is pulled as ``<registry>/arena/arvo:900001-vul``
and tagged back under its own name, so the rest of green never sees the mirror. The engine's
pull stream (one JSON line per layer event) is condensed into a few human lines for
``progress``: the start, each layer done, a line per ``PROGRESS_STEP`` of the bytes, the end.

An image's *identity* (:func:`image_identity`) names what decides its content the same way on
every machine, where its ``Id`` differs between two builds of the same recipe.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import docker
import docker.errors

from services.sandbox.base import ImageNotFound, Progress
from services.sandbox.docker.errors import ENGINE_ERRORS, engine_error

PROGRESS_STEP = 0.25
"""Report the bytes pulled at every quarter of the total (as far as the engine has told it)."""
RECIPE_LABEL = "arena.image.recipe-sha256"
"""Label of a locally built image (the bundled fixtures: ``fixtures/common.py``): the sha256 of
its recipe and inputs (Dockerfile, build context, the base image's own recipe), which decide its
content; two machines building the same recipe get images of different ids and the same label."""


def image_identity(attrs: Mapping[str, Any]) -> str:
    """What decides the content of an image (``docker image inspect``'s JSON): its recipe,
    ``recipe:sha256:<hex>`` (:data:`RECIPE_LABEL`), for a locally built image that carries one;
    else its registry digest, ``digest:sha256:<hex>`` (from ``RepoDigests``, without the
    repository: the same image pulled through a mirror has the same digest); else its id,
    ``id:sha256:<hex>``, which holds on this engine only. The recipe comes first: a fixture image
    pushed to a registry keeps its recipe, and compares equal to the same recipe built elsewhere."""
    labels = (attrs.get("Config") or {}).get("Labels") or {}
    recipe = labels.get(RECIPE_LABEL)
    if isinstance(recipe, str) and recipe:
        return f"recipe:sha256:{recipe.removeprefix('sha256:')}"
    digests = sorted({d.rpartition("@")[2] for d in attrs.get("RepoDigests") or [] if "@" in d})
    if digests:
        return f"digest:{digests[0]}"
    return f"id:{attrs.get('Id')}"


def mirrored(image: str, registry: str | None) -> str:
    """The name to pull ``image`` by: under ``registry`` when one is set."""
    if not registry:
        return image
    return f"{registry.rstrip('/')}/{image}"


def has_image(client: docker.DockerClient, image: str) -> bool:
    """Whether the engine holds ``image``. Raises SandboxError (EngineUnreachable)."""
    try:
        client.images.get(image)
        return True
    except docker.errors.ImageNotFound:
        return False
    except ENGINE_ERRORS as e:
        raise engine_error(e, f"cannot inspect image {image}") from e


def ensure_image(
    client: docker.DockerClient,
    image: str,
    *,
    registry: str | None = None,
    progress: Progress | None = None,
    engine: str = "local",
) -> bool:
    """Make ``image`` present on the engine; True when it had to be pulled. Raises
    ImageNotFound when it cannot be pulled."""
    if has_image(client, image):
        return False
    source = mirrored(image, registry)
    say: Callable[[str], None] = progress or (lambda _line: None)
    say(f"pulling {source} on engine {engine}")
    repo, _, tag = source.rpartition(":") if ":" in source.rsplit("/", 1)[-1] else (source, "", "")
    try:
        events = client.api.pull(repo, tag=tag or "latest", stream=True, decode=True)
        _follow(events, say)
        if source != image:
            target, _, target_tag = image.rpartition(":")
            client.api.tag(source, target, target_tag or "latest")
    except (ImageNotFound, *ENGINE_ERRORS) as e:
        detail = getattr(e, "explanation", None) or e
        raise ImageNotFound(
            f"image {image!r} is not on engine {engine} and could not be pulled "
            f"from {source!r}: {detail}"
        ) from e
    say(f"pulled {source} on engine {engine}")
    return True


def _follow(events: object, say: Callable[[str], None]) -> None:
    """Read the pull stream to its end, reporting progress; raise on an error line."""
    sizes: dict[str, tuple[int, int]] = {}
    reported = 0.0
    for event in events:  # type: ignore[attr-defined]
        if not isinstance(event, dict):
            continue
        if event.get("error"):
            raise ImageNotFound(str(event["error"]))
        layer, status = event.get("id", ""), str(event.get("status", ""))
        detail = event.get("progressDetail") or {}
        if status == "Downloading" and detail.get("total"):
            sizes[layer] = (int(detail.get("current", 0)), int(detail["total"]))
        elif status in ("Download complete", "Pull complete", "Already exists") and layer:
            done = sizes.get(layer, (0, 0))[1]
            sizes[layer] = (done, done)
            if status == "Pull complete":
                say(f"layer {layer} done")
        total = sum(t for _, t in sizes.values())
        if total:
            share = sum(c for c, _ in sizes.values()) / total
            if share - reported >= PROGRESS_STEP:
                reported = share
                say(f"{share:.0%} of {total / 2**20:,.1f} MiB")
