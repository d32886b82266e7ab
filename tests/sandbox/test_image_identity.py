"""An image's identity: its recipe when it was built locally from one, else its registry digest
(the same through a mirror), else its id."""

from __future__ import annotations

from services.sandbox.docker.images import RECIPE_LABEL, image_identity

ID = "sha256:" + "1" * 64
DIGEST = "sha256:" + "2" * 64
RECIPE = "3" * 64


def test_the_recipe_then_the_registry_digest_then_the_id() -> None:
    pulled = {"Id": ID, "RepoDigests": [f"n132/arvo@{DIGEST}"], "Config": {"Labels": None}}
    mirrored = {**pulled, "RepoDigests": [f"registry.internal:5000/n132/arvo@{DIGEST}"]}
    local = {"Id": ID, "RepoDigests": [], "Config": {"Labels": {RECIPE_LABEL: RECIPE}}}
    pushed = {**local, "RepoDigests": [f"registry.internal:5000/arena/arvo@{DIGEST}"]}
    assert image_identity(pulled) == image_identity(mirrored) == f"digest:{DIGEST}"
    assert image_identity(local) == image_identity(pushed) == f"recipe:sha256:{RECIPE}"
    assert image_identity({"Id": ID, "RepoDigests": None, "Config": {}}) == f"id:{ID}"
    assert image_identity({"Id": ID}) == f"id:{ID}"
