"""Prefetch one task before a run: its asset files into green's cache and its image onto the
engine; or, dry, say how many bytes that needs (HTTP HEAD for a remote source, file sizes for a
local one, the engine's figure for an image already present)."""

from __future__ import annotations

import time
from typing import Any

import docker

from services.green.kinds.arvo.assets import AssetSource, HttpAssetSource, LocalAssetSource
from services.green.kinds.arvo.datasets.images import image_digest, image_size

FILES = ("error.txt", "repo-vul.tar.gz", "patch.diff")


def _file_plan(source: AssetSource, ref: str, name: str) -> dict[str, Any]:
    if isinstance(source, LocalAssetSource):
        path = source.path_for(ref, name)
        return {"bytes": path.stat().st_size if path.is_file() else -1, "cached": True}
    if isinstance(source, HttpAssetSource):
        cached = source.cached_path(ref, name)
        if cached.is_file():
            return {"bytes": cached.stat().st_size, "cached": True}
        return {"bytes": source.remote_size(ref, name), "cached": False}
    return {"bytes": None, "cached": False}


def plan(source: AssetSource, client: docker.DockerClient, image: str, ref: str) -> dict:
    """What prefetching ``ref`` would fetch. A file's ``bytes`` is -1 when the source does not
    have it, None when unknown; ``image.bytes`` is None when the image is not pulled yet."""
    files = {name: _file_plan(source, ref, name) for name in FILES}
    size = image_size(client, image)
    missing = [n for n, f in files.items() if f["bytes"] == -1]
    return {
        "ref": ref,
        "files": files,
        "image": {"name": image, "present": size is not None, "bytes": size},
        "download_bytes": sum(f["bytes"] or 0 for f in files.values() if not f["cached"]),
        "error": f"the source has no {', '.join(missing)}" if missing else None,
    }


def fetch(
    source: AssetSource,
    client: docker.DockerClient,
    image: str,
    ref: str,
    registry: str | None = None,
) -> dict:
    """Fetch every file (a cached one is only checked) and pull the image when absent (through
    ``registry`` when set)."""
    t0 = time.monotonic()
    files = {}
    for name in FILES:
        path = source.fetch(ref, name)
        files[name] = {"bytes": path.stat().st_size, "cached": True}
    had = image_size(client, image) is not None
    digest = image_digest(client, image, registry=registry)
    return {
        "ref": ref,
        "files": files,
        "image": {
            "name": image,
            "present": True,
            "pulled": not had,
            "digest": digest,
            "bytes": image_size(client, image),
        },
        "seconds": round(time.monotonic() - t0, 2),
        "error": None,
    }
