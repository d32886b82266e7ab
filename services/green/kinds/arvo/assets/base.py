"""The asset seam: where a task's files come from.

Layout (the CyberGym dataset's): ``<base>/<arvo_id>/{error.txt,repo-vul.tar.gz,patch.diff}``.
The base is an HTTP(S) URL or a local directory. Files are cached on disk; the cache is shared
by tasks of the same id and safe under concurrency (atomic writes).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from services.green.kinds.errors import AssetError
from services.green.kinds.errors import UnknownTask as UnknownTask  # re-exported

AssetName = Literal["error.txt", "repo-vul.tar.gz", "patch.diff"]
AGENT_VISIBLE: tuple[AssetName, ...] = ("error.txt", "repo-vul.tar.gz")
GROUND_TRUTH: tuple[AssetName, ...] = ("patch.diff",)


class AssetTimeout(AssetError):
    """The source did not answer in time."""


class CorruptAsset(AssetError):
    """A file arrived but is unusable (bad gzip/tar, unsafe member, truncated)."""


@runtime_checkable
class AssetSource(Protocol):
    def fetch(self, arvo_id: str, name: AssetName) -> Path:
        """Return the path of a cached, complete copy of one asset file."""
        ...
