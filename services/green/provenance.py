"""A task's provenance: what decides its score, recorded on the task when its container is ready.

Green's version and commit, the scoring rule's version, the task image by digest (``docker image
inspect``'s ``Id``; a tag can be moved), the sha256 of each asset and of the ground truth (the
hashes only: the ground truth itself never reaches the agent), the engine's version, purple's
card (name, version, URL, and what its model extension reports: model id, request settings,
context window, limits; never a key or URL) and the settings that change limits or scores. ``arena`` copies it
into each run's ``manifest.json`` and refuses to compare runs whose scoring rule or image digest
differs for a task.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import subprocess
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

import httpx

from services.green.config import GreenSettings
from services.shared.http import async_client

CARD_TIMEOUT_S = 5.0
MODEL_EXTENSION = "urn:arvo-arena:purple:model:v1"
"""Purple's card extension whose ``params`` name its model and request settings (docs/models.md;
the URI is repeated here: green never imports purple)."""
_SECRET_KEY = re.compile(
    r"(^|[_-])(api_?key|key|token|secret|password|passwd|auth|authorization|credentials?|"
    r"url|uri|endpoint|headers?|cookie)$",
    re.I,
)


def _clean(value: Any) -> Any:
    """``value`` without keys that could hold credentials or endpoints and without URLs."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items() if not _SECRET_KEY.search(str(k))}
    if isinstance(value, list):
        return [_clean(v) for v in value if not (isinstance(v, str) and "://" in v)]
    if isinstance(value, str) and "://" in value:
        return None
    return value


def model_of(card: dict[str, Any]) -> dict[str, Any] | None:
    """The params of the card's model extension (model id, temperature, top_p, seed, max_tokens,
    context window, limits...), with nothing that could be a key or a URL; None without it."""
    caps = card.get("capabilities") if isinstance(card, dict) else None
    for ext in (caps or {}).get("extensions") or []:
        if isinstance(ext, dict) and ext.get("uri") == MODEL_EXTENSION:
            params = ext.get("params")
            return _clean(params) if isinstance(params, dict) else {}
    return None


@cache
def green_version() -> dict[str, str | None]:
    """The package version and, in a git checkout, the commit (None elsewhere)."""
    try:
        version: str | None = metadata.version("arvo-rca-arena")
    except metadata.PackageNotFoundError:
        version = None
    commit = None
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
        commit = out.stdout.strip() or None if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        commit = None
    return {"version": version, "commit": commit}


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def sha256_json(obj: Any) -> str:
    """sha256 of the canonical JSON (sorted keys, no spaces) of ``obj``."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


_cards: dict[str, dict[str, Any]] = {}


async def purple_card(url: str) -> dict[str, Any]:
    """Name, version, URL and the model extension's params (``model``: None when the card has
    none, e.g. the offline analyst) from purple's agent card (fetched once per URL; the error
    when it cannot be read)."""
    if url in _cards:
        return _cards[url]
    card_url = url.rstrip("/") + "/.well-known/agent-card.json"
    try:
        async with async_client(timeout=CARD_TIMEOUT_S, trust_env=False) as client:
            resp = await client.get(card_url)
            resp.raise_for_status()
            data = resp.json()
        card = {
            "name": data.get("name"),
            "version": data.get("version"),
            "url": url,
            "description": data.get("description"),
            "model": model_of(data),
        }
    except (httpx.HTTPError, ValueError, AttributeError) as exc:
        return {"url": url, "error": f"agent card unreadable: {type(exc).__name__}"}
    _cards[url] = card
    return card


def limits(settings: GreenSettings, task: Any) -> dict[str, Any]:
    """The settings that change limits or scores."""
    return {
        "max_steps": task.max_steps,
        "task_timeout_s": task.task_timeout_s,
        "command_timeout_s": task.command_timeout_s,
        "idle_timeout_s": settings.idle_timeout_s,
        "container_memory": settings.container_memory,
        "container_cpus": settings.container_cpus,
        "container_pids": settings.container_pids,
        "container_network": settings.container_network,
        "container_disk_bytes": settings.container_disk_bytes,
        "strip_git": settings.strip_git,
        "hide_poc": settings.hide_poc,
        "mask_arvo_id": settings.mask_arvo_id,
    }


def task_provenance(
    *,
    settings: GreenSettings,
    task: Any,
    kind: str,
    scoring_version: str | None,
    image_name: str,
    image_facts: dict[str, Any] | None,
    assets: dict[str, Path],
    ground_truth: dict[str, Any] | None,
    engine: str,
    card: dict[str, Any],
) -> dict[str, Any]:
    facts = dict(image_facts or {})
    engine_version = facts.pop("engine_version", None)
    return {
        "green": green_version(),
        "scoring": {"kind": kind, "version": scoring_version},
        "image": {"name": image_name, **facts},
        "engine": {"name": engine, "version": engine_version},
        "assets_sha256": {name: sha256_file(p) for name, p in sorted(assets.items())},
        "ground_truth_sha256": sha256_json(ground_truth) if ground_truth is not None else None,
        "purple": card,
        "limits": limits(settings, task),
        "trial": task.trial,
    }


async def provenance_of(live: Any, settings: GreenSettings, task: Any, io: Any) -> dict[str, Any]:
    """The provenance of a task whose container is ready (``live``: its LiveTask; ``io`` runs a
    blocking call in a thread). A fact that cannot be read is recorded as its error, never
    failing the task."""
    plan, sandbox = live.plan, live.sandbox
    facts_of = getattr(sandbox, "image_facts", None)
    try:
        facts = await io(facts_of) if facts_of else None
    except Exception as exc:
        facts = {"error": f"{type(exc).__name__}: {exc}"}
    card = await purple_card(live.purple_url)
    return await asyncio.to_thread(
        task_provenance,
        settings=settings,
        task=task,
        kind=live.ref.kind,
        scoring_version=getattr(live.kind, "scoring_version", None),
        image_name=plan.image,
        image_facts=facts,
        assets=dict(getattr(plan, "assets", {}) or {}),
        ground_truth=task.ground_truth,
        engine=sandbox.engine,
        card=card,
    )
