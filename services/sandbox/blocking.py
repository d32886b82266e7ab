"""A blocking facade over the async seam, for scripts, image builds, benchmarks and tests.

:class:`BlockingProvider` runs an event loop in a thread of its own and hands every call of
the wrapped provider (and of the sandboxes it creates) to it, so synchronous code can use a
sandbox without an event loop of its own. Services use the async seam directly.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Collection, Coroutine, Mapping
from typing import Any, BinaryIO, TypeVar

from services.sandbox.base import Progress, Sandbox, SandboxProvider, SandboxSpec
from services.shared.commands import CommandResult

T = TypeVar("T")


class LoopThread:
    """An event loop running in a daemon thread; :meth:`call` runs a coroutine on it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="sandbox-loop", daemon=True
        )
        self._thread.start()

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)


class BlockingSandbox:
    """A :class:`Sandbox` whose methods block; other attributes pass through."""

    def __init__(self, sandbox: Sandbox, loop: LoopThread) -> None:
        self.sandbox = sandbox
        self._loop = loop

    def __getattr__(self, name: str) -> Any:
        return getattr(self.sandbox, name)

    def __enter__(self) -> BlockingSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()

    def exec(self, command: str, timeout: float) -> CommandResult:
        return self._loop.call(self.sandbox.exec(command, timeout))

    def setup(self, command: str, timeout: float) -> CommandResult:
        return self._loop.call(self.sandbox.setup(command, timeout))

    def put_files(self, dest_dir: str, files: Mapping[str, bytes]) -> None:
        self._loop.call(self.sandbox.put_files(dest_dir, files))

    def put_archive(self, dest_dir: str, archive: bytes | BinaryIO) -> None:
        self._loop.call(self.sandbox.put_archive(dest_dir, archive))

    def read_file(self, path: str, max_bytes: int = 1 << 20) -> bytes:
        return self._loop.call(self.sandbox.read_file(path, max_bytes))

    def read_tree(self, path: str, out: BinaryIO, max_bytes: int) -> None:
        self._loop.call(self.sandbox.read_tree(path, out, max_bytes))

    def remove(self) -> None:
        self._loop.call(self.sandbox.remove())


class BlockingProvider:
    """A :class:`SandboxProvider` whose methods block; other attributes pass through."""

    def __init__(self, provider: SandboxProvider, loop: LoopThread | None = None) -> None:
        self.provider = provider
        self.loop = loop or LoopThread()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.provider, name)

    def run(self, fn: Callable[..., Coroutine[Any, Any, T]], *args: Any, **kwargs: Any) -> T:
        """Run any coroutine function on the provider's loop."""
        return self.loop.call(fn(*args, **kwargs))

    def create(self, spec: SandboxSpec, progress: Progress | None = None) -> BlockingSandbox:
        return BlockingSandbox(self.loop.call(self.provider.create(spec, progress)), self.loop)

    def reap(
        self, keep: Callable[[str], bool] | None = None, *, only: Collection[str] | None = None
    ) -> list[str]:
        return self.loop.call(self.provider.reap(keep, only=only))

    def ping(self) -> bool:
        return self.loop.call(self.provider.ping())

    def close(self) -> None:
        self.loop.call(self.provider.aclose())
        self.loop.close()
