"""The errors a kind raises when a task's files cannot be had: the core maps them to answers.

``UnknownTask``: the kind's source has no such task (404 at intake). ``AssetError``: its source
failed otherwise (slow, broken, corrupt: preparation retries, then the task ends as infra).
A kind may subclass ``AssetError`` for its own cases (ARVO: ``AssetTimeout``, ``CorruptAsset``).
"""

from __future__ import annotations


class AssetError(RuntimeError):
    """Base class: a task's files could not be had from its kind's source."""


class UnknownTask(AssetError):
    """The source has no such task id (HTTP 404, missing folder, no such instance)."""
