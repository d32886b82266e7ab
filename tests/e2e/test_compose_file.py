"""deploy/docker-compose.yml passes every setting through (no Docker needed).

A setting added to GreenSettings/PurpleSettings must either be listed in the service's
`environment:` (so .env / the shell reach the container) or be one of the container-internal
ones that the image fixes (listen address, paths inside the container).
"""

from __future__ import annotations

import re

import yaml
from pydantic_settings import BaseSettings

from fixtures.catalog import REPO_ROOT
from scripts.gen_env_example import env_name
from services.green.config import DeveloperChecks, GreenSettings
from services.purple.config import PurpleSettings
from services.shared.telemetry import TracingSettings

COMPOSE = REPO_ROOT / "deploy" / "docker-compose.yml"
OVERLAYS = (
    REPO_ROOT / "deploy" / "docker-compose.demo.yml",
    REPO_ROOT / "tests" / "e2e" / "docker-compose.e2e.yml",
)
DOCKERFILE = REPO_ROOT / "deploy" / "Dockerfile"
# Set by deploy/Dockerfile (ENV) or by the compose file itself; never from a host .env.
INTERNAL = {
    "GREEN_HOST",
    "GREEN_PORT",
    "GREEN_DATABASE_URL",
    "GREEN_ASSET_CACHE_DIR",
    "GREEN_LOG_DIR",
    "PURPLE_HOST",
    "PURPLE_PORT",
    "PURPLE_LOG_DIR",
    "PURPLE_TRAJECTORY_DIR",
}


def env_names(cls: type[BaseSettings]) -> set[str]:
    """The variables of .env.example for ``cls``."""
    return {env_name(cls, name, field) for name, field in cls.model_fields.items()}


def service_block(text: str, service: str) -> str:
    m = re.search(rf"^  {service}:\n(.*?)(?=^  \S|^\S|\Z)", text, re.S | re.M)
    assert m, f"no service {service} in {COMPOSE}"
    return m.group(1)


def environment_keys(block: str) -> set[str]:
    m = re.search(r"^    environment:\n((?:      .*\n|\s*\n)+)", block, re.M)
    assert m, "no environment: block"
    return set(re.findall(r"^      ([A-Z][A-Z0-9_]*):", m.group(1), re.M))


def test_every_setting_reaches_its_container() -> None:
    text = COMPOSE.read_text()
    dockerfile = DOCKERFILE.read_text()
    for service, cls in (("green", GreenSettings), ("purple", PurpleSettings)):
        passed = environment_keys(service_block(text, service))
        missing = env_names(cls) - passed - INTERNAL
        assert not missing, (
            f"{service}: add to deploy/docker-compose.yml environment: {sorted(missing)}"
        )
        assert "ARENA_LOG_RUN" in passed
        tracing = env_names(TracingSettings) - {"OTEL_SERVICE_NAME"}  # each service names itself
        assert tracing <= passed, f"{service}: pass through {sorted(tracing - passed)}"
        fixed_here = {n for n in INTERNAL if n.startswith(service.upper())}
        assert not fixed_here & passed, f"{service}: container-internal settings passed through"
        unset = {n for n in fixed_here if n in env_names(cls) and f"{n}=" not in dockerfile}
        assert not unset, f"deploy/Dockerfile must set {sorted(unset)}"


def test_no_stale_names() -> None:
    text = COMPOSE.read_text()
    known = env_names(GreenSettings) | env_names(PurpleSettings) | env_names(DeveloperChecks)
    for service in ("green", "purple"):
        for key in environment_keys(service_block(text, service)):
            if key.startswith(("GREEN_", "PURPLE_", "OPENAI_")):
                assert key in known, f"{service}: {key} is no setting (renamed?)"


def test_the_dependency_layer_is_keyed_by_the_lock_alone() -> None:
    """What the ``deps`` stage copies before it installs the dependencies decides when that
    layer (every dependency) is rebuilt: the lock and the project file only, so that an edit of
    the README or the code rebuilds only the small project layer."""
    dockerfile = DOCKERFILE.read_text()
    deps = dockerfile.split("FROM deps AS project")[0]
    before_sync = deps.split("RUN uv sync")[0]
    copied = [line.split()[1:-1] for line in before_sync.splitlines() if line.startswith("COPY ")]
    assert copied == [["pyproject.toml", "uv.lock"]]


def _source(volume: str) -> str:
    """A short-syntax volume's source (``${ARENA_LOGS_DIR:-../logs}/green:/logs`` ->
    ``${ARENA_LOGS_DIR:-../logs}/green``): what comes before the ``:/`` of its target."""
    m = re.match(r"^(.+?):(/.*)$", volume)
    return m.group(1) if m else volume


def _stage(dockerfile: str, target: str) -> str:
    m = re.search(rf"^FROM \S+ AS {target}\n(.*?)(?=^FROM |\Z)", dockerfile, re.S | re.M)
    assert m, f"no stage {target} in {DOCKERFILE}"
    return m.group(1)


def test_purple_shares_no_volume_with_green_and_runs_as_another_user() -> None:
    """Issue 39, attack 10: green's logs pair each task with its bug (``arvo_<id>.log``), which
    the task message masks. No volume or host folder of green's is mounted into purple (or any
    other service), in the stack, the demo overlay or the tests' overlay; and the two images run
    as different users, so neither could read or change the other's files on a shared one."""
    green: set[str] = set()
    others: dict[str, set[str]] = {}
    for path in (COMPOSE, *OVERLAYS):
        for name, service in yaml.safe_load(path.read_text())["services"].items():
            sources = {_source(str(v)) for v in service.get("volumes") or []}
            (
                green.update(sources)
                if name == "green"
                else others.setdefault(name, set()).update(sources)
            )
    assert "purple" in others
    for name, sources in others.items():
        assert not sources & green, f"{name} mounts green's {sorted(sources & green)}"
    dockerfile = DOCKERFILE.read_text()
    users = {
        t: re.findall(r"^USER (\S+)", _stage(dockerfile, t), re.M) for t in ("green", "purple")
    }
    uids = {
        t: re.findall(r"useradd --uid (\d+)", _stage(dockerfile, t)) for t in ("green", "purple")
    }
    assert len(users["green"]) == len(users["purple"]) == 1 and users["green"] != users["purple"]
    assert uids["green"] and uids["purple"] and uids["green"] != uids["purple"], uids
