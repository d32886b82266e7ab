"""A local Docker registry (Debian's ``docker-registry``, a real Distribution server): a fixture.

It listens on ``127.0.0.1:<free port>`` (Docker engines talk plain HTTP to 127.0.0.0/8 without
any configuration) and stores under a temporary directory; it is stopped and its storage
removed at the end. :func:`push` copies an image of the machine's engine into it. Skipped when
the binary is missing (scripts/ensure-registry.sh installs it), a failure under ARENA_STRICT=1.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import docker
import httpx
import pytest

from tests.support import web
from tests.support.servers import free_port

STRICT = os.environ.get("ARENA_STRICT") == "1"
BINARY = "docker-registry"
CONFIG = """\
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: {root}
  delete:
    enabled: true
http:
  addr: 127.0.0.1:{port}
"""


@dataclass
class LocalRegistry:
    address: str
    """``127.0.0.1:<port>``: the prefix of image names pushed here."""
    root: Path
    process: subprocess.Popen

    def push(self, client: docker.DockerClient, image: str, name: str | None = None) -> str:
        """Push ``image`` (present on ``client``'s engine) as ``<address>/<image>``, or as
        ``<address>/<name>`` (a stand-in for another image)."""
        target = f"{self.address}/{name or image}"
        repo, _, tag = target.rpartition(":")
        client.images.get(image).tag(repo, tag)
        try:
            for event in client.api.push(repo, tag=tag, stream=True, decode=True):
                if event.get("error"):
                    raise RuntimeError(f"push of {target} failed: {event['error']}")
        finally:
            client.images.remove(target)
        return target


def start_registry() -> LocalRegistry:
    binary = shutil.which(BINARY)
    if binary is None:
        why = f"{BINARY} is not installed (scripts/ensure-registry.sh)"
        if STRICT:
            pytest.fail(f"ARENA_STRICT: {why}")
        pytest.skip(why)
    root = Path(tempfile.mkdtemp(prefix="arena-registry-"))
    port = free_port()
    config = root / "config.yml"
    config.write_text(CONFIG.format(root=root / "data", port=port))
    log = (root / "registry.log").open("wb")
    process = subprocess.Popen([binary, "serve", str(config)], stdout=log, stderr=subprocess.STDOUT)
    registry = LocalRegistry(f"127.0.0.1:{port}", root, process)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if web.get(f"http://{registry.address}/v2/", timeout=2).status_code == 200:
                return registry
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    stop_registry(registry)
    raise RuntimeError(f"the registry did not start: {(root / 'registry.log').read_text()}")


def stop_registry(registry: LocalRegistry) -> None:
    registry.process.terminate()
    try:
        registry.process.wait(15)
    except subprocess.TimeoutExpired:
        registry.process.kill()
    shutil.rmtree(registry.root, ignore_errors=True)


@pytest.fixture(scope="module")
def local_registry() -> Iterator[LocalRegistry]:
    registry = start_registry()
    try:
        yield registry
    finally:
        stop_registry(registry)
