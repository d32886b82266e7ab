"""Providers by name: green's GREEN_SANDBOX_PROVIDER picks one; an unknown name is refused."""

from __future__ import annotations

import pytest

from services.green.config import GreenSettings
from services.sandbox import SandboxProvider, create_provider, provider_names, register_provider
from services.sandbox.docker import DockerSandboxProvider
from services.sandbox.docker.pool import EnginePool, parse_host


def test_docker_is_registered_and_the_default() -> None:
    assert "docker" in provider_names()
    assert GreenSettings().sandbox_provider == "docker"
    provider = create_provider("docker", owner="t-owner")
    assert isinstance(provider, EnginePool) and isinstance(provider, SandboxProvider)
    [local] = provider.members  # no GREEN_DOCKER_HOSTS: the local engine alone
    assert local.name == "local" and isinstance(local.provider, DockerSandboxProvider)


def test_engine_entries_parse_or_are_refused() -> None:
    assert parse_host("tcp://h:2376#slots=4", 0) == ("tcp://h:2376", 4)
    assert parse_host("unix:///run/d.sock", 3) == ("unix:///run/d.sock", 3)
    for bad in ("h:2376", "tcp://h#slot=x", "ftp://h"):
        with pytest.raises(ValueError, match="bad engine"):
            parse_host(bad, 0)


def test_unknown_provider_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"unknown sandbox provider 'kubernetes'.*docker"):
        create_provider("kubernetes")


def test_green_refuses_an_unknown_provider_at_start(monkeypatch: pytest.MonkeyPatch, tmp_path):
    from services.green.app import create_app

    monkeypatch.setenv("GREEN_SANDBOX_PROVIDER", "nope")
    settings = GreenSettings(database_url=f"sqlite:///{tmp_path}/g.db", log_dir=tmp_path / "logs")
    with pytest.raises(ValueError, match="unknown sandbox provider 'nope'"):
        create_app(settings)


def test_a_new_provider_plugs_in_by_name() -> None:
    made: list[dict] = []

    @register_provider("test-only")
    def factory(**options: object) -> SandboxProvider:
        made.append(options)
        return DockerSandboxProvider()

    try:
        create_provider("test-only", owner="x")
        assert made == [{"owner": "x"}]
    finally:
        from services.sandbox import registry

        registry._FACTORIES.pop("test-only")
