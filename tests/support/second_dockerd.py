"""A second Docker engine on this machine, for engine-pool tests: a pytest fixture.

``dockerd`` with its own socket, ``--data-root``, ``--exec-root`` and pid file under a
temporary directory, ``--iptables=false`` and ``--ip-masq=false`` (it touches no firewall rule:
task containers have no network anyway). It starts empty (no images) and is stopped, and its
directory removed, at the end. Needs root and the ``dockerd`` binary (scripts/ensure-docker.sh);
skipped otherwise, a failure under ARENA_STRICT=1.

Not ``--bridge=none``: a dockerd started with it deletes the host's ``docker0`` interface (its
start-up removes "the default bridge" it is told not to use), which cuts the machine's own
engine off its default network. This engine gets a bridge of its own (``arena-br<hex>``, a
private /24), created here and deleted at the end; the teardown checks ``docker0`` survived.

:func:`btrfs_dockerd` is the same engine on a loop-mounted btrfs file system of its own
(``--storage-driver=btrfs``, ``btrfs quota enable``), whose storage driver enforces a
container's ``storage_opt size`` (qgroups): the disk-cap tests run there. Needs btrfs-progs
(scripts/ensure-btrfs.sh) and a kernel with btrfs. :func:`ext4_dockerd` runs it on a
loop-mounted ext4 of its own with overlay2, Docker's default storage, where the cap is watched:
the file system's used bytes are this engine's alone, so a test reads a container's host growth
from them.

It also listens on ``tcp://127.0.0.1:<free port>`` with mutual TLS (``--tlsverify``, a CA made
for it: tests/support/engine_tls.py), so the pool's ``tcp://`` path runs against a real engine.
"""

from __future__ import annotations

import os
import random
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import docker
import docker.errors
import pytest

from services.sandbox.blocking import BlockingProvider
from services.sandbox.docker import DockerSandboxProvider
from tests.support.engine_tls import EngineTls, make_engine_tls
from tests.support.servers import free_port

STRICT = os.environ.get("ARENA_STRICT") == "1"
START_TIMEOUT_S = 60.0


@dataclass
class SecondEngine:
    url: str
    root: Path
    process: subprocess.Popen
    bridge: str = ""
    tls_url: str = ""
    """``tcp://127.0.0.1:<port>``: the same engine, over mutual TLS."""
    tls: EngineTls | None = None
    mount: Path | None = None
    """The file system of its own the engine's data-root is on (:func:`btrfs_dockerd`,
    :func:`ext4_dockerd`)."""

    def client(self) -> docker.DockerClient:
        return docker.DockerClient(base_url=self.url, timeout=120)


def _unavailable(why: str) -> None:
    if STRICT:
        pytest.fail(f"ARENA_STRICT: no second Docker engine: {why}")
    pytest.skip(f"no second Docker engine: {why}")


def _run_or_skip(root: Path, mount: Path, *commands: list[str]) -> Path:
    """Run ``commands`` (making a file system and mounting it at ``mount``) in turn; the first
    that fails undoes the mount and ``root`` and makes the test unavailable. Returns ``mount``."""
    for cmd in commands:
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            subprocess.run(["umount", str(mount)], capture_output=True)
            shutil.rmtree(root, ignore_errors=True)
            _unavailable(f"{' '.join(cmd[:2])} failed: {done.stderr.strip()[-300:]}")
    return mount


def _btrfs_data_root(root: Path, size: int) -> Path:
    """A loop-mounted btrfs file system of ``size`` bytes (sparse) with quotas on, at
    ``root/data``; the engine's data-root is its ``docker`` folder."""
    for tool in ("mkfs.btrfs", "btrfs", "mount"):
        if shutil.which(tool) is None:
            _unavailable(f"{tool} is missing (scripts/ensure-btrfs.sh)")
    image, mount = root / "btrfs.img", root / "data"
    with image.open("wb") as f:
        f.truncate(size)
    mount.mkdir()
    return _run_or_skip(
        root,
        mount,
        ["mkfs.btrfs", "-q", "-f", "-m", "single", str(image)],  # metadata once, as counted
        ["mount", "-o", "loop,noatime", str(image), str(mount)],
        ["btrfs", "quota", "enable", str(mount)],
    )


def _ext4_data_root(root: Path, size: int) -> Path:
    """A loop-mounted ext4 file system of ``size`` bytes (sparse, the kernel's default mount
    options) at ``root/data``."""
    image, mount = root / "ext4.img", root / "data"
    with image.open("wb") as f:
        f.truncate(size)
    mount.mkdir()
    return _run_or_skip(
        root,
        mount,
        ["mkfs.ext4", "-q", "-F", str(image)],
        ["mount", "-o", "loop", str(image), str(mount)],
    )


def start_second_dockerd(btrfs_bytes: int = 0, ext4_bytes: int = 0) -> SecondEngine:
    """Start the engine and wait until it answers; with ``btrfs_bytes``, on a btrfs data-root
    of that size (:func:`_btrfs_data_root`); with ``ext4_bytes``, overlay2 on an ext4 of that
    size (:func:`_ext4_data_root`)."""
    if os.geteuid() != 0:
        _unavailable("starting dockerd needs root")
    if shutil.which("dockerd") is None:
        _unavailable("dockerd is not installed (scripts/ensure-docker.sh)")
    if shutil.which("ip") is None:
        _unavailable("the ip command (iproute2) is missing")
    root = Path(tempfile.mkdtemp(prefix="arena-dockerd-"))
    mount = _btrfs_data_root(root, btrfs_bytes) if btrfs_bytes else None
    data_args = [f"--data-root={root / 'data'}"]
    if mount is not None:
        data_args = [f"--data-root={mount / 'docker'}", "--storage-driver=btrfs"]
    elif ext4_bytes:
        mount = _ext4_data_root(root, ext4_bytes)
        data_args = [f"--data-root={mount / 'docker'}", "--storage-driver=overlay2"]
    sock = root / "docker.sock"
    bridge = f"arena-br{secrets.token_hex(3)}"
    subnet = f"10.{random.randint(200, 250)}.{random.randint(0, 255)}"
    for cmd in (
        ["ip", "link", "add", "name", bridge, "type", "bridge"],
        ["ip", "addr", "add", f"{subnet}.1/24", "dev", bridge],
        ["ip", "link", "set", bridge, "up"],
    ):
        subprocess.run(cmd, check=True, capture_output=True)
    tls = make_engine_tls(root / "tls")
    tls_url = f"tcp://127.0.0.1:{free_port()}"
    log = (root / "dockerd.log").open("wb")
    process = subprocess.Popen(
        [
            "dockerd",
            f"--host=unix://{sock}",
            f"--host={tls_url}",
            *tls.dockerd_args(),
            *data_args,
            f"--exec-root={root / 'exec'}",
            f"--pidfile={root / 'docker.pid'}",
            f"--bridge={bridge}",
            "--iptables=false",
            "--ip-masq=false",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    engine = SecondEngine(f"unix://{sock}", root, process, bridge, tls_url, tls, mount)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        try:
            engine.client().ping()
            return engine
        except Exception:
            time.sleep(0.5)
    stop_second_dockerd(engine)
    _unavailable(f"dockerd did not answer: {(root / 'dockerd.log').read_text()[-2000:]}")
    raise AssertionError("unreachable")


def stop_second_dockerd(engine: SecondEngine) -> None:
    """Remove its containers, stop it (SIGTERM, then SIGKILL) and delete its directory."""
    if engine.process.poll() is None:
        try:
            client = engine.client()
            for container in client.containers.list(all=True):
                container.remove(force=True)
        except Exception:
            pass
        engine.process.send_signal(signal.SIGCONT)  # in case a test froze it
        engine.process.terminate()
        try:
            engine.process.wait(60)
        except subprocess.TimeoutExpired:
            engine.process.kill()
            engine.process.wait(10)
    if engine.bridge:
        subprocess.run(["ip", "link", "del", engine.bridge], capture_output=True)
    subprocess.run(["umount", "-R", str(engine.root / "exec")], capture_output=True)
    subprocess.run(["umount", "-R", str(engine.root / "data")], capture_output=True)
    if engine.mount is not None and os.path.ismount(engine.mount):
        subprocess.run(["umount", "-l", str(engine.mount)], capture_output=True)
    shutil.rmtree(engine.root, ignore_errors=True)


def _has_docker0() -> bool:
    return Path("/sys/class/net/docker0").exists()


@pytest.fixture(scope="module")
def second_dockerd() -> Iterator[SecondEngine]:
    had_docker0 = _has_docker0()
    engine = start_second_dockerd()
    try:
        yield engine
    finally:
        stop_second_dockerd(engine)
        assert _has_docker0() == had_docker0, "the second dockerd took the host's docker0"


BTRFS_BYTES = 3 * 2**30
"""Size of :func:`btrfs_dockerd`'s file system (a sparse file: only what is written is used)."""


@pytest.fixture(scope="module")
def btrfs_dockerd() -> Iterator[SecondEngine]:
    """A second engine whose storage driver (btrfs, quotas on) enforces ``storage_opt size``."""
    had_docker0 = _has_docker0()
    engine = start_second_dockerd(btrfs_bytes=BTRFS_BYTES)
    try:
        yield engine
    finally:
        stop_second_dockerd(engine)
        assert _has_docker0() == had_docker0, "the second dockerd took the host's docker0"


EXT4_BYTES = 12 * 2**30
"""Size of :func:`ext4_dockerd`'s file system (a sparse file: only what is written is used)."""


@pytest.fixture(scope="module")
def ext4_dockerd() -> Iterator[SecondEngine]:
    """A second engine with Docker's default storage (overlay2 on ext4), on a file system of its
    own: the cap is watched there."""
    had_docker0 = _has_docker0()
    engine = start_second_dockerd(ext4_bytes=EXT4_BYTES)
    try:
        yield engine
    finally:
        stop_second_dockerd(engine)
        assert _has_docker0() == had_docker0, "the second dockerd took the host's docker0"


def provider_on(
    engine: SecondEngine, image: str, prefix: str, name: str
) -> Iterator[BlockingProvider]:
    """A blocking provider on ``engine`` with ``image`` loaded into it from the main engine
    (skips when the main engine lacks it); its containers reaped afterwards. For a module
    fixture: ``yield from provider_on(...)``."""
    main = docker.from_env()
    try:
        main.images.get(image)
    except docker.errors.ImageNotFound:
        pytest.skip(f"test image {image} is not built (scripts/setup.sh)")
    save = subprocess.Popen(["docker", "save", image], stdout=subprocess.PIPE)
    subprocess.run(["docker", "-H", engine.url, "load", "-q"], stdin=save.stdout, check=True)
    assert save.wait() == 0
    client = engine.client()
    provider = BlockingProvider(DockerSandboxProvider(client, label_prefix=prefix, name=name))
    yield provider
    provider.reap()
    provider.close()
    client.close()
    main.close()
