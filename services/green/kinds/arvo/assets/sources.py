"""Asset sources: the CyberGym dataset over HTTP(S), or a local folder with the same layout.

Both implement :class:`services.green.kinds.arvo.assets.base.AssetSource`:
``fetch(arvo_id, name) -> Path`` returns a complete, validated file.

HTTP cache layout: ``<cache_dir>/<source-slug>/<id>/<file>``, where the slug names the base URL
(``huggingface.co-1a2b3c4d``) so two sources never share entries. A file enters the cache only
whole and validated: it is streamed to ``.<file>.<random>.part`` in the same folder, checked
(``*.tar.gz`` must be a complete gzip tar), then ``os.replace``-d into place. Concurrent fetches
of one (id, file) by threads or processes download once: the first holds
``.<file>.lock`` (thread lock + ``flock``), the others wait and then find the cached file.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import structlog

from services.green.kinds.arvo.assets.base import (
    AssetError,
    AssetName,
    AssetTimeout,
    CorruptAsset,
    UnknownTask,
)
from services.green.kinds.arvo.assets.extract import verify_gzip_tar
from services.green.kinds.arvo.assets.ids import parse_arvo_id
from services.green.kinds.arvo.assets.locks import file_lock
from services.shared.http import client as http_client

log = structlog.get_logger(__name__)

DEFAULT_BASE_URL = "https://huggingface.co/datasets/sunblaze-ucb/cybergym/resolve/main/data/arvo"
"""CyberGym's ARVO tasks on Hugging Face: ``<base>/<id>/<file>`` (redirects to a CDN)."""

RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_CHUNK = 1 << 20


def check_asset_name(name: str) -> str:
    """Accept dataset file names (``error.txt``, ``repo-vul.tar.gz``, ``patch.diff``,
    ``description.txt``, ...); refuse anything that could leave the task folder."""
    if not isinstance(name, str) or not _SAFE_NAME.match(name) or ".." in name:
        raise ValueError(f"not an asset file name: {name!r}")
    return name


def is_archive(name: str) -> bool:
    return name.endswith((".tar.gz", ".tgz"))


def validate_asset(path: Path, name: str) -> None:
    """Raise :class:`CorruptAsset` if the file is unusable: ``*.tar.gz`` must be a complete,
    readable, non-empty gzip tar. Text files (``error.txt``, ``patch.diff``) may be empty
    (some ARVO patches are)."""
    if not path.is_file():
        raise CorruptAsset(f"{name} is not a regular file: {path}")
    if is_archive(name):
        verify_gzip_tar(path)


class _Retry(Exception):
    """One attempt failed in a way worth retrying; ``final`` is what to raise after the last."""

    def __init__(self, final: AssetError) -> None:
        super().__init__(str(final))
        self.final = final


def _slug(base_url: str) -> str:
    host = re.sub(r"[^A-Za-z0-9.-]", "_", urlsplit(base_url).netloc or "local") or "host"
    digest = hashlib.sha256(base_url.rstrip("/").encode()).hexdigest()[:8]
    return f"{host}-{digest}"


class HttpAssetSource:
    """Download task files from ``<base_url>/<id>/<file>`` into a shared on-disk cache.

    - 404 → :class:`UnknownTask`; timeouts → :class:`AssetTimeout`; other HTTP errors →
      :class:`AssetError` naming the status; redirects are followed (HF → CDN).
    - 408/425/429/5xx, connection errors and timeouts are retried ``retries`` times with
      exponential backoff (``backoff_s``, ``2*backoff_s``, ...).
    - ``timeout_s`` bounds connecting and each read (a stalled transfer); ``total_timeout_s``
      (optional) bounds one whole attempt.
    - A corrupt download raises :class:`CorruptAsset` and leaves nothing in the cache, so the
      next fetch downloads again.
    """

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        cache_dir: str | Path = Path("data/cache"),
        timeout_s: float = 120.0,
        client: httpx.Client | None = None,
        *,
        retries: int = 3,
        backoff_s: float = 1.0,
        total_timeout_s: float | None = None,
        lock_timeout_s: float | None = 6 * 3600.0,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.cache_root = Path(cache_dir) / _slug(self.base_url)
        self.timeout_s = timeout_s
        self.total_timeout_s = total_timeout_s
        self.retries = max(0, retries)
        self.backoff_s = backoff_s
        self.lock_timeout_s = lock_timeout_s
        self._headers = {"Accept-Encoding": "identity", **dict(headers or {})}
        self._own_client = client is None
        self._client = client or http_client(
            timeout=httpx.Timeout(timeout_s), follow_redirects=True
        )

    # -- public -----------------------------------------------------------------------------

    def url_for(self, arvo_id: str | int, name: AssetName | str) -> str:
        return f"{self.base_url}/{parse_arvo_id(arvo_id)}/{check_asset_name(name)}"

    def cached_path(self, arvo_id: str | int, name: AssetName | str) -> Path:
        """Where the file lives once fetched (it may not exist yet)."""
        return self.cache_root / parse_arvo_id(arvo_id) / check_asset_name(name)

    def remote_size(self, arvo_id: str | int, name: AssetName | str) -> int | None:
        """The file's size as the source announces it (HTTP HEAD, on this source's client and
        headers): -1 when the source has no such file, None when it does not say."""
        try:
            r = self._client.head(  # as fetch: a client passed in may not follow redirects
                self.url_for(arvo_id, name), headers=self._headers, follow_redirects=True
            )
        except httpx.HTTPError:
            return None
        if r.status_code == 404:
            return -1
        length = r.headers.get("content-length")
        return int(length) if r.is_success and length and length.isdigit() else None

    def fetch(self, arvo_id: str | int, name: AssetName | str) -> Path:
        """Return the cached, validated file, downloading it first if needed."""
        arvo_id = parse_arvo_id(arvo_id)
        name = check_asset_name(name)
        final = self.cached_path(arvo_id, name)
        if self._usable(final, name, repair=False):
            return final
        final.parent.mkdir(parents=True, exist_ok=True)
        with file_lock(final.parent / f".{name}.lock", self.lock_timeout_s):
            if self._usable(
                final, name, repair=True
            ):  # another thread/process fetched it meanwhile
                return final
            url = self.url_for(arvo_id, name)
            started = time.monotonic()
            tmp = self._download(url, final.parent, name)
            try:
                validate_asset(tmp, name)
                os.replace(tmp, final)
            except BaseException:
                with contextlib.suppress(FileNotFoundError):
                    tmp.unlink()
                raise
            log.info(
                "asset_downloaded",
                arvo_id=arvo_id,
                file=name,
                bytes=final.stat().st_size,
                seconds=round(time.monotonic() - started, 3),
            )
        return final

    def invalidate(self, arvo_id: str | int, name: AssetName | str) -> None:
        """Drop a cached file (e.g. after a later check found it unusable)."""
        path = self.cached_path(arvo_id, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        with (
            file_lock(path.parent / f".{path.name}.lock", self.lock_timeout_s),
            contextlib.suppress(FileNotFoundError),
        ):
            path.unlink()

    def close(self) -> None:
        if self._own_client:
            self._client.close()

    def __enter__(self) -> HttpAssetSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"HttpAssetSource({self.base_url!r}, cache={str(self.cache_root)!r})"

    # -- internals --------------------------------------------------------------------------

    @staticmethod
    def _usable(path: Path, name: str, *, repair: bool) -> bool:
        """A cache entry exists and looks whole. Entries are validated before they are
        published, so a cheap check suffices; a damaged one (gzip magic gone) is dropped when
        ``repair`` (only under the file's lock)."""
        try:
            if not path.is_file():
                return False
            if is_archive(name):
                with open(path, "rb") as fh:
                    whole = fh.read(2) == b"\x1f\x8b"
                if not whole and repair:
                    path.unlink()
                return whole
            return True
        except OSError:
            return False

    def _download(self, url: str, folder: Path, name: str) -> Path:
        last: AssetError | None = None
        for attempt in range(self.retries + 1):
            if attempt:
                delay = self.backoff_s * (2 ** (attempt - 1))
                log.warning("asset_retry", url=url, attempt=attempt, delay_s=delay, error=str(last))
                time.sleep(delay)
            try:
                return self._download_once(url, folder, name)
            except _Retry as exc:
                last = exc.final
        assert last is not None
        raise last

    def _download_once(self, url: str, folder: Path, name: str) -> Path:
        deadline = None if self.total_timeout_s is None else time.monotonic() + self.total_timeout_s
        fd, tmp_name = tempfile.mkstemp(prefix=f".{name}.", suffix=".part", dir=folder)
        tmp = Path(tmp_name)
        ok = False
        try:
            with (
                os.fdopen(fd, "wb") as out,
                self._client.stream(
                    "GET", url, headers=self._headers, follow_redirects=True
                ) as resp,
            ):
                status = resp.status_code
                if status == 404:
                    raise UnknownTask(f"no such task file: {url} (HTTP 404)")
                if status in RETRY_STATUSES:
                    raise _Retry(AssetError(f"GET {url} failed: HTTP {status}"))
                if status >= 400:
                    raise AssetError(f"GET {url} failed: HTTP {status}")
                # keep .gz bytes exactly as served; let httpx undo transfer encodings otherwise
                chunks = resp.iter_raw(_CHUNK) if is_archive(name) else resp.iter_bytes(_CHUNK)
                received = 0
                for chunk in chunks:
                    out.write(chunk)
                    received += len(chunk)
                    if deadline is not None and time.monotonic() > deadline:
                        raise _Retry(
                            AssetTimeout(
                                f"GET {url}: download took longer than {self.total_timeout_s}s"
                            )
                        )
                expected = resp.headers.get("content-length")
                encoded = resp.headers.get("content-encoding", "identity") != "identity"
                if expected and expected.isdigit() and not encoded and int(expected) != received:
                    raise _Retry(CorruptAsset(f"GET {url}: got {received} of {expected} bytes"))
            ok = True
            return tmp
        except httpx.TimeoutException as exc:
            raise _Retry(
                AssetTimeout(f"GET {url} timed out ({type(exc).__name__}, {self.timeout_s}s)")
            ) from exc
        except httpx.TransportError as exc:
            raise _Retry(AssetError(f"GET {url} failed: {type(exc).__name__}: {exc}")) from exc
        except httpx.HTTPError as exc:
            raise AssetError(f"GET {url} failed: {type(exc).__name__}: {exc}") from exc
        finally:
            if not ok:
                with contextlib.suppress(FileNotFoundError):
                    tmp.unlink()


SOURCE_MANIFEST = "arena-source.json"
"""A local asset folder's description of itself (see :meth:`LocalAssetSource.describe`)."""


class LocalAssetSource:
    """Task files from a local folder with the dataset's layout: ``<root>/<id>/<file>``.

    Returns the files in place (no copy: nothing is downloaded, and the caller never writes to
    an asset). ``*.tar.gz`` files are validated on first use per process (remembered by path,
    size and mtime) and a corrupt one raises :class:`CorruptAsset`; the user's file is never
    deleted.
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        if not self.root.is_dir():
            raise ValueError(f"asset folder does not exist: {self.root}")
        self._validated: set[tuple[str, int, int]] = set()
        self._guard = threading.Lock()

    def path_for(self, arvo_id: str | int, name: AssetName | str) -> Path:
        return self.root / parse_arvo_id(arvo_id) / check_asset_name(name)

    def describe(self) -> dict[str, Any]:
        """What the folder says of itself in ``arena-source.json`` (written by whoever fills it,
        e.g. ``python -m fixtures.build``): ``name``, the ``tasks`` it can hold and the ``build``
        command of one (``{id}`` in it). Empty when there is none or it is not readable."""
        try:
            doc = json.loads((self.root / SOURCE_MANIFEST).read_text())
        except (OSError, ValueError):
            return {}
        return doc if isinstance(doc, dict) else {}

    def _missing(self, arvo_id: str, what: str) -> UnknownTask:
        """The error for a task (or one of its files) that is not there, in the user's terms:
        the asset source they configured, and the command that builds the task when the
        folder says how. Never the folder's path inside green (a container's /assets)."""
        about = self.describe()
        build, known = str(about.get("build", "")), {str(t) for t in about.get("tasks", [])}
        name = str(about.get("name") or "the local asset folder (GREEN_ASSET_SOURCE)")
        if build and arvo_id in known:
            return UnknownTask(
                f"arvo:{arvo_id} is one of {name} but is not built ({what}); build it with: "
                + build.replace("{id}", arvo_id)
            )
        if known:
            built = sorted(i for i in known if (self.root / i / "error.txt").is_file())
            unbuilt = sorted(known - set(built))
            said = f"built: {', '.join(built) or 'none'}"
            if unbuilt:
                said += f"; it can build {', '.join(unbuilt)}"
                if build:
                    said += " with: " + build.replace("{id}", "<id>")
            return UnknownTask(f"no task arvo:{arvo_id} in {name} ({said})")
        return UnknownTask(
            f"no task arvo:{arvo_id} in {name} ({what}): it needs {arvo_id}/error.txt, "
            "repo-vul.tar.gz and patch.diff, or set GREEN_ASSET_SOURCE to the dataset's URL"
        )

    def fetch(self, arvo_id: str | int, name: AssetName | str) -> Path:
        arvo_id = parse_arvo_id(arvo_id)
        name = check_asset_name(name)
        task_dir = self.root / arvo_id
        if not task_dir.is_dir():
            raise self._missing(arvo_id, "no folder for it")
        path = task_dir / name
        if not path.is_file():
            raise self._missing(arvo_id, f"its {name} is missing")
        if is_archive(name):
            st = path.stat()
            key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
            with self._guard:
                known = key in self._validated
            if not known:
                validate_asset(path, name)
                with self._guard:
                    self._validated.add(key)
        return path

    def invalidate(self, arvo_id: str | int, name: AssetName | str) -> None:
        """Forget that a file was validated (it is re-checked on the next fetch)."""
        with self._guard:
            prefix = str(self.path_for(arvo_id, name).resolve())
            self._validated = {k for k in self._validated if k[0] != prefix}

    def close(self) -> None:
        pass

    def __repr__(self) -> str:
        return f"LocalAssetSource({str(self.root)!r})"


def make_asset_source(
    spec: str | Path,
    cache_dir: str | Path = Path("data/cache"),
    *,
    timeout_s: float = 120.0,
    **http_options: object,
) -> HttpAssetSource | LocalAssetSource:
    """``http://`` / ``https://`` → :class:`HttpAssetSource` caching under ``cache_dir``;
    anything else is a local folder (``file://`` prefix and ``~`` accepted) →
    :class:`LocalAssetSource`. Extra keyword options go to :class:`HttpAssetSource`."""
    text = str(spec).strip()
    if text.startswith(("http://", "https://")):
        return HttpAssetSource(text, cache_dir, timeout_s, **http_options)  # type: ignore[arg-type]
    if text.startswith("file://"):
        text = text[len("file://") :]
    if not text:
        raise ValueError("empty asset source")
    return LocalAssetSource(Path(text).expanduser())
