"""Sandboxes for the sandbox tests: an agent's task container of a test image, removed after."""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Callable, Iterator

from services.sandbox.base import SandboxError, SandboxSpec
from services.sandbox.blocking import BlockingProvider, BlockingSandbox


@contextlib.contextmanager
def sandbox_maker(
    provider: BlockingProvider, image: str, **defaults: object
) -> Iterator[Callable[..., BlockingSandbox]]:
    """A ``make(**overrides)`` that creates sandboxes of ``image`` as a task's are (its
    ``/workspace`` the agent's), with ``defaults`` and then ``overrides`` as spec fields; every
    one is removed when the block ends."""
    made: list[BlockingSandbox] = []

    def make(**overrides: object) -> BlockingSandbox:
        fields: dict = {"image": image, "task_id": secrets.token_hex(8), "ref_id": "4242"}
        fields.update(writable=("/workspace",), **defaults)
        made.append(provider.create(SandboxSpec(**{**fields, **overrides})))
        return made[-1]

    try:
        yield make
    finally:
        for sandbox in made:
            with contextlib.suppress(SandboxError):
                sandbox.remove()
