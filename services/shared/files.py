"""Files written atomically: a reader never sees half a file, an interrupt never leaves one."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_atomic(path: str | Path, data: bytes | str, mode: int = 0o644) -> None:
    """Write ``data`` (text as UTF-8) to a temporary file in the same folder (created if
    needed), flush it to disk, then rename it over ``path`` (with ``mode``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: str | Path, data: Any, mode: int = 0o644) -> None:
    """``data`` as indented JSON (non-ASCII kept) with a final newline, written atomically."""
    write_atomic(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n", mode)
