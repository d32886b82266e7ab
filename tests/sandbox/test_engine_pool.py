"""A pool of real Docker engines: placement, pulls through a local registry, an engine going down.

Engines: the machine's own, a second ``dockerd`` started for the module
(tests/support/second_dockerd.py, empty at start; also reached over ``tcp://`` with mutual
TLS), and a forwarder to the machine's engine that the test can cut
(tests/support/docker_proxy.py). Images come from a local Distribution registry
(tests/support/local_registry.py), never from a public one.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import docker
import docker.errors
import pytest

from services.sandbox.base import EngineUnreachable, SandboxError, SandboxSpec
from services.sandbox.docker.pool import SILENT_CHECKS, docker_provider
from services.sandbox.docker.provider import start_slots
from services.sandbox.janitor import Janitor
from tests.support.docker_proxy import ENGINE_SOCKET, DockerProxy
from tests.support.engine_tls import stranger_dir
from tests.support.local_registry import LocalRegistry, local_registry  # noqa: F401
from tests.support.second_dockerd import SecondEngine, second_dockerd  # noqa: F401

pytestmark = pytest.mark.docker

IMAGE = os.environ.get("ARENA_POOL_IMAGE", "arena/python-base:3.11-bookworm")
"""Any image with a shell serves: the smallest one setup builds (145 MB; pushing and pulling the
714 MB ARVO fixture made this module cost 58 core-seconds instead of 22)."""
PREFIX = f"arenapool{secrets.token_hex(3)}"
LOCAL = f"unix://{ENGINE_SOCKET}"


@pytest.fixture(scope="module")
def main_client() -> Iterator[docker.DockerClient]:
    try:
        client = docker.from_env()
        client.ping()
        client.images.get(IMAGE)
    except docker.errors.ImageNotFound:
        pytest.skip(f"image {IMAGE} is not built (scripts/setup.sh)")
    except Exception as e:
        pytest.skip(f"no Docker engine: {e}")
    yield client
    for container in client.containers.list(all=True, filters={"label": f"{PREFIX}.managed=1"}):
        container.remove(force=True)
    client.close()


def _spec() -> SandboxSpec:
    return SandboxSpec(
        image=IMAGE, task_id=secrets.token_hex(8), ref_id="900001", memory="256m", cpus=0.5
    )


async def test_tasks_spread_over_engines_and_an_engine_pulls_through_the_registry(
    main_client: docker.DockerClient,
    second_dockerd: SecondEngine,  # noqa: F811
    local_registry: LocalRegistry,  # noqa: F811
) -> None:
    source = local_registry.push(main_client, IMAGE)
    second = second_dockerd.client()
    with pytest.raises(docker.errors.ImageNotFound):
        second.images.get(IMAGE)  # the second engine starts empty
    pool = docker_provider(
        hosts=[LOCAL, second_dockerd.url],
        slots=2,
        registry=local_registry.address,
        label_prefix=PREFIX,
    )
    lines: list[str] = []
    made = []
    try:
        for _ in range(4):
            made.append(await pool.create(_spec(), progress=lines.append))
        # the first engine holds the image: preferred until full; then the second one pulls
        assert [s.engine for s in made] == ["engine-0", "engine-0", "engine-1", "engine-1"]
        assert lines[0] == f"pulling {source} on engine engine-1"
        assert lines[-1] == f"pulled {source} on engine engine-1"
        assert any(line.endswith("MiB") for line in lines), lines  # bytes as they come
        assert sum(line.startswith("pulling") for line in lines) == 1  # once per engine
        assert second.images.get(IMAGE).id == main_client.images.get(IMAGE).id
        for sandbox in made:
            assert (await sandbox.exec("echo $((6 * 7))", 30)).output == "42\n"
        rows = {row["name"]: row for row in await pool.engines()}
        assert rows["engine-0"]["running"] == rows["engine-1"]["running"] == 2
        assert rows["engine-1"]["capacity"] == 2 and rows["engine-1"]["up"] is True
    finally:
        for sandbox in made:
            await sandbox.remove()
        await pool.aclose()
    assert second.containers.list(all=True) == []


async def test_an_engine_that_stops_answering_is_down_and_its_sandboxes_are_lost(
    main_client: docker.DockerClient, tmp_path: Path
) -> None:
    proxy = DockerProxy(Path(f"/tmp/arena-pool-{secrets.token_hex(4)}.sock")).start()
    pool = docker_provider(hosts=[LOCAL, proxy.url], label_prefix=PREFIX, check_s=1.0)
    made = []
    try:
        made += [await pool.create(_spec()), await pool.create(_spec())]
        assert sorted(s.engine for s in made) == ["engine-0", "engine-1"]  # the least busy
        [cut] = [s for s in made if s.engine == "engine-1"]
        [kept] = [s for s in made if s.engine == "engine-0"]
        proxy.stop()
        await pool.check()
        rows = {row["name"]: row for row in await pool.engines()}
        assert rows["engine-1"]["up"] is False and rows["engine-1"]["error"]
        assert rows["engine-0"]["up"] is True and await pool.ping() is True
        assert cut.lost and "engine-1 stopped answering" in cut.lost and kept.lost is None
        with pytest.raises(SandboxError):
            await cut.exec("true", 5)
        made.append(await pool.create(_spec()))
        assert made[-1].engine == "engine-0"  # no new task on a down engine
        proxy.start()
        await pool.check()
        assert all(row["up"] for row in await pool.engines())
    finally:
        proxy.start()
        for sandbox in made:
            await sandbox.remove()
        await pool.aclose()
        proxy.stop()


async def test_a_creation_waits_for_a_free_slot_and_gives_up_after_the_slot_wait(
    main_client: docker.DockerClient,
) -> None:
    pool = docker_provider(hosts=[f"{LOCAL}#slots=1"], label_prefix=PREFIX, slot_wait_s=2.0)
    made = []
    try:
        made.append(await pool.create(_spec()))
        with pytest.raises(SandboxError, match="every engine was full for 2 s"):
            await pool.create(_spec())  # the one slot stays taken
        pool.slot_wait_s = 600  # the next one waits long enough for the removal below
        waiting = asyncio.create_task(pool.create(_spec()))
        await asyncio.sleep(0.5)
        assert not waiting.done()  # queued behind the slot, not refused
        await made.pop().remove()  # the slot frees: the waiting creation takes it
        made.append(await asyncio.wait_for(waiting, 30))
        assert len(await pool.engines()) == 1 and made[-1].engine == "engine-0"
    finally:
        for sandbox in made:
            await sandbox.remove()
        await pool.aclose()


async def test_an_engine_over_tcp_with_mutual_tls(
    main_client: docker.DockerClient,
    second_dockerd: SecondEngine,  # noqa: F811
    local_registry: LocalRegistry,  # noqa: F811
    tmp_path: Path,
) -> None:
    local_registry.push(main_client, IMAGE)
    assert second_dockerd.tls is not None
    pool = docker_provider(
        hosts=[second_dockerd.tls_url],
        tls_dir=second_dockerd.tls.client_dir,
        registry=local_registry.address,
        label_prefix=PREFIX,
    )
    sandbox = None
    try:
        sandbox = await pool.create(_spec())  # pulls through the registry if absent
        await sandbox.put_files("/tmp/in", {"a/b.txt": b"through TLS\n"})  # before commands
        # the shell session over an SSL socket: a short answer, then a long one in pieces
        short = await sandbox.exec("echo over-tls", 30)
        assert (short.exit_code, short.output.strip()) == (0, "over-tls")
        long = await sandbox.exec("head -c 300000 /dev/zero | tr '\\0' x; echo; exit 3", 30)
        assert long.exit_code == 3 and long.output.count("x") + long.bytes_cut == 300000
        timed = await sandbox.exec("sleep 30", 1)
        assert timed.timed_out and (await sandbox.exec("echo still-here", 10)).exit_code == 0
        assert await sandbox.read_file("/tmp/in/a/b.txt") == b"through TLS\n"
    finally:
        if sandbox is not None:
            await sandbox.remove()
        await pool.aclose()

    # a client whose certificate another CA signed is refused: the engine is down, with why
    stranger = docker_provider(
        hosts=[second_dockerd.tls_url],
        tls_dir=stranger_dir(tmp_path / "stranger", second_dockerd.tls),
        label_prefix=PREFIX,
        check_s=5.0,
    )
    try:
        await stranger.check()
        [row] = await stranger.engines()
        assert row["up"] is False and row["error"], row
        with pytest.raises(EngineUnreachable):
            await stranger.create(_spec())
    finally:
        await stranger.aclose()


async def test_a_slow_engine_admits_no_new_task_and_a_silent_one_is_down_only_after_a_while(
    main_client: docker.DockerClient,
) -> None:
    """Admission by the engine's answers (its monitor pings it every check_s): prompt, it admits
    start_slots(CPUs) starting tasks (one per CPU but one, at least one); slow, none, its running containers
    untouched; silent for SILENT_CHECKS checks in a row, down. (A loaded engine used to be
    marked down at its first late answer, which ended every task on it.)"""
    proxy = DockerProxy(Path(f"/tmp/arena-pool-{secrets.token_hex(4)}.sock")).start()
    pool = docker_provider(hosts=[proxy.url], label_prefix=PREFIX, check_s=2.0)
    engine = pool.engine("engine-0")
    made = []

    async def until(what) -> None:
        async with asyncio.timeout(60):
            while not what():
                assert engine.up or engine.silent >= SILENT_CHECKS  # never down any sooner
                await asyncio.sleep(0.05)

    try:
        made.append(await pool.create(_spec()))
        await until(lambda: engine.prompt)
        admits = start_slots(main_client.info()["NCPU"])
        assert pool.can_start() == admits

        proxy.delay = lambda request: 1.5  # it answers, late
        await until(lambda: engine.latency is not None and not engine.prompt)
        assert engine.up and pool.can_start() == 0 and made[0].lost is None

        proxy.delay = lambda request: 3.0  # no answer within check_s
        await until(lambda: not engine.up)
        assert engine.silent >= SILENT_CHECKS and made[0].lost

        proxy.delay = lambda request: 0
        await until(lambda: engine.prompt)
        assert pool.can_start() == admits
    finally:
        proxy.delay = lambda request: 0
        for sandbox in made:
            await sandbox.remove()
        await pool.aclose()
        proxy.stop()


async def test_a_container_green_gave_up_on_takes_no_slot_and_is_retried_with_backoff(
    main_client: docker.DockerClient,
) -> None:
    """An engine jammed on one container (its removal fails) is not full: once the container
    is handed to the janitor, its slot is the next task's; the janitor tries again at growing
    intervals until the removal works."""
    pool = docker_provider(hosts=[f"{LOCAL}#slots=1"], label_prefix=PREFIX, slot_wait_s=2.0)
    jammed = await pool.create(_spec())
    real_remove, attempts = jammed.remove, []

    async def refused() -> None:  # the engine's answer about this one container never comes
        attempts.append(asyncio.get_running_loop().time())
        raise SandboxError("removing the container timed out")

    jammed.remove = refused  # type: ignore[method-assign]
    janitor = Janitor(pool, lambda task_id: False, retry_s=0.1)
    made = [jammed]
    try:
        janitor.remove_later(jammed)
        made.append(await pool.create(_spec()))  # the one slot is free: no "every engine was full"
        assert janitor.pending == [jammed.name]
        while len(attempts) < 4:
            await asyncio.sleep(0.05)
        gaps = [b - a for a, b in itertools.pairwise(attempts)]
        assert gaps == sorted(gaps) and gaps[-1] >= 2 * gaps[0], gaps  # backing off
        jammed.remove = real_remove  # type: ignore[method-assign]
        while janitor.pending:
            await asyncio.sleep(0.05)
    finally:
        await janitor.close()
        for sandbox in made:
            await sandbox.remove()
        await pool.aclose()
    assert not main_client.containers.list(all=True, filters={"name": jammed.name})


async def test_a_dead_replicas_containers_on_a_down_engine_are_not_reported_removed(
    main_client: docker.DockerClient,
) -> None:
    """A reap of a dead replica's tasks (``only``) removes them on every engine that answers
    and raises for one that does not, so that its caller (the takeover) tries again: returning
    as if done left the down engine's containers behind for good."""
    proxy = DockerProxy(Path(f"/tmp/arena-pool-{secrets.token_hex(4)}.sock")).start()
    dead = docker_provider(hosts=[LOCAL, proxy.url], label_prefix=PREFIX, owner="replica-dead")
    taker = docker_provider(hosts=[LOCAL, proxy.url], label_prefix=PREFIX, owner="replica-live")
    made = []
    try:
        made += [await dead.create(_spec()), await dead.create(_spec())]
        assert sorted(s.engine for s in made) == ["engine-0", "engine-1"]
        tasks = {s.spec.task_id for s in made}
        proxy.stop()
        with pytest.raises(EngineUnreachable, match="not reaped on engine-1"):
            await taker.reap(only=tasks)
        proxy.start()
        await taker.reap(only=tasks)  # every engine answers: done (both engines are this one)
        left = main_client.containers.list(all=True, filters={"label": f"{PREFIX}.managed=1"})
        assert not [c.name for c in left if c.labels[f"{PREFIX}.task_id"] in tasks]
    finally:
        proxy.start()
        for sandbox in made:
            await sandbox.remove()
        await dead.aclose()
        await taker.aclose()
        proxy.stop()


async def test_a_reap_is_not_failed_by_another_container_removed_while_it_lists(
    main_client: docker.DockerClient,
) -> None:
    """On a busy engine containers come and go while a reap lists them: one removed between
    the list and its inspection (another green's task ending) is skipped, not an error that
    fails the whole reap (and, every round, a dead replica's takeover)."""
    proxy = DockerProxy(Path(f"/tmp/arena-pool-{secrets.token_hex(4)}.sock")).start()
    creator = docker_provider(hosts=[LOCAL], label_prefix=PREFIX, owner="replica-dead")
    taker = docker_provider(hosts=[proxy.url], label_prefix=PREFIX, owner="replica-live")
    made = []
    try:
        target, bystander = await creator.create(_spec()), await creator.create(_spec())
        made += [target, bystander]
        bystander_id = main_client.containers.get(bystander.name).id

        def remove_bystander_first(request: bytes) -> float:
            if (
                request.startswith(b"GET ")
                and f"/containers/{bystander_id}/json".encode() in (request.split(b" ", 2)[1])
            ):
                main_client.containers.get(bystander_id).remove(force=True)
            return 0.0

        proxy.delay = remove_bystander_first
        assert await taker.reap(only={target.spec.task_id}) == [target.name]
    finally:
        proxy.delay = lambda request: 0
        for sandbox in made:
            await sandbox.remove()
        await creator.aclose()
        await taker.aclose()
        proxy.stop()
