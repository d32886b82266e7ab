"""A task's provenance: what decides its score, recorded on the task when its container is ready.

Green's build (version, commit, dirty flag, lock-file sha256, Python, numpy, scipy:
:mod:`services.shared.build_info`), the scoring rule's version, the task image (``docker image
inspect``'s ``Id``, its registry digests, and ``identity``: what decides its content, the same on
every machine for the same image: :func:`services.sandbox.docker.images.image_identity`), the sha256
of each asset and of the ground truth (the hashes only: the ground truth itself never reaches
the agent), the engine's version, the settings that change limits or scores, and purple as it is
when it takes the task: its card (name, version, URL), what its agent extension says (policy,
agent config, build) and its model extension (model id, request settings such as the seed,
context window, limits); never a key or a URL. Purple's card is read anew for every task, after
purple accepted it (:func:`purple_card`): a purple restarted at the same URL with another policy,
model or seed is recorded as it is. ``arena`` copies the provenance into each run's
``manifest.json`` and refuses to compare runs whose scoring rule or image differs for a task.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import httpx

from services.green.config import GreenSettings
from services.green.kinds.metrics import asset_signatures
from services.shared.build_info import build_info
from services.shared.digests import sha256_file, sha256_json
from services.shared.http import BodyTooLarge, async_client, read_capped
from services.shared.protocol import AGENT_EXTENSION, MODEL_EXTENSION

CARD_TIMEOUT_S = 5.0
"""Most seconds reading purple's card takes, in all."""
CARD_MAX_BYTES = 64 * 1024
"""Most bytes of purple's card green reads (a purple is not trusted; its card is a few KiB)."""
TEXT_MAX = 1000
"""Most characters kept of the card's name, version and description."""
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


def extension_params(card: dict[str, Any], uri: str) -> dict[str, Any] | None:
    """The params of the card's extension ``uri``, with nothing that could be a key or a URL;
    None without that extension."""
    caps = card.get("capabilities") if isinstance(card, dict) else None
    extensions = caps.get("extensions") if isinstance(caps, dict) else None
    for ext in extensions if isinstance(extensions, list) else []:
        if isinstance(ext, dict) and ext.get("uri") == uri:
            params = ext.get("params")
            return _clean(params) if isinstance(params, dict) else {}
    return None


def model_of(card: dict[str, Any]) -> dict[str, Any] | None:
    """The params of the card's model extension (model id, temperature, top_p, seed, max_tokens,
    context window, limits...), with nothing that could be a key or a URL; None without it."""
    return extension_params(card, MODEL_EXTENSION)


def _text(value: Any) -> str | None:
    return value[:TEXT_MAX] if isinstance(value, str) else None


async def purple_card(url: str) -> dict[str, Any]:
    """What purple's agent card says of it now: name, version, URL, description, ``agent`` (the
    agent extension's params: policy, agent config, build) and ``model`` (the model extension's;
    None when the card has none, e.g. the offline analyst). Read anew at every call, at most
    :data:`CARD_MAX_BYTES` within :data:`CARD_TIMEOUT_S`; an unreadable card is recorded as
    its error."""
    card_url = url.rstrip("/") + "/.well-known/agent-card.json"
    try:
        async with (
            asyncio.timeout(CARD_TIMEOUT_S),
            async_client(timeout=CARD_TIMEOUT_S, trust_env=False) as client,
        ):
            status, _, body = await read_capped(client, card_url, CARD_MAX_BYTES)
        if status != 200:
            return {"url": url, "error": f"agent card unreadable: HTTP {status}"}
        data = json.loads(body)
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        return {
            "name": _text(data.get("name")),
            "version": _text(data.get("version")),
            "url": url,
            "description": _text(data.get("description")),
            "agent": extension_params(data, AGENT_EXTENSION),
            "model": model_of(data),
        }
    except (httpx.HTTPError, TimeoutError, BodyTooLarge, ValueError, RecursionError) as exc:
        return {"url": url, "error": f"agent card unreadable: {type(exc).__name__}"}


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
    purple_url: str,
    signatures: Mapping[str, Callable[[bytes], bytes]] | None = None,
) -> dict[str, Any]:
    """The facts that decided a task's score (and that :mod:`services.shared.comparable`
    compares): its assets by sha256, and those its kind signs (``signatures``: a crash report
    without its run-to-run details) by their signature's sha256 too."""
    signatures = signatures or {}
    facts = dict(image_facts or {})
    engine_version = facts.pop("engine_version", None)
    return {
        "green": build_info(),
        "scoring": {"kind": kind, "version": scoring_version},
        "image": {"name": image_name, **facts},
        "engine": {"name": engine, "version": engine_version},
        "assets_sha256": {name: sha256_file(p) for name, p in sorted(assets.items())},
        "assets_signature_sha256": {
            name: hashlib.sha256(sign(assets[name].read_bytes())).hexdigest()
            for name, sign in sorted(signatures.items())
            if name in assets
        },
        "ground_truth_sha256": sha256_json(ground_truth) if ground_truth is not None else None,
        "purple": {"url": purple_url},  # the card once purple took the task (purple_card)
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
    return await asyncio.to_thread(
        task_provenance,
        settings=settings,
        task=task,
        kind=live.ref.kind,
        scoring_version=live.kind.traits.scoring_version,
        image_name=plan.image,
        image_facts=facts,
        assets=dict(getattr(plan, "assets", {}) or {}),
        ground_truth=task.ground_truth,
        engine=sandbox.engine,
        purple_url=live.purple_url,
        signatures=asset_signatures(live.kind),
    )
