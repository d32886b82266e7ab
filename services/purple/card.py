"""Purple's agent card: its skill, and two extensions that say what answers a task.

- ``AGENT_EXTENSION`` (always): the policy's name, the agent config (its file's name and the
  sha256 of the whole effective config, for a policy with a model) and the build (version,
  commit, dirty flag, lock-file sha256, Python: :mod:`services.shared.build_info`);
- ``MODEL_EXTENSION`` (a policy with a model): the model, its request settings (temperature,
  top_p, seed, max_tokens...) and limits.

Never a key or a URL. Green reads the card for every task it hands over and records these in
the task's provenance, so a purple restarted at the same URL with another policy, model or seed
is recorded as it is (docs/scoring.md, "Provenance").
"""

from __future__ import annotations

from a2a.types import AgentCard, AgentExtension, AgentSkill

from services.purple.config import PurpleSettings
from services.purple.policies import agent_config
from services.shared.a2a import build_agent_card
from services.shared.a2a_numbers import with_record
from services.shared.build_info import build_info
from services.shared.digests import sha256_json
from services.shared.protocol import AGENT_EXTENSION, MODEL_EXTENSION

VERSION = "0.1.0"
"""The card's version (the package's version, commit and lock are in the agent extension)."""


def agent_extension(settings: PurpleSettings, policy: str) -> AgentExtension:
    """What answers: the policy ``policy`` (its name), its agent config and purple's build."""
    config = None
    if settings.effective_policy() == "react":
        file = settings.agent_config.name if settings.agent_config else None
        effective = agent_config(settings).model_dump(mode="json")
        config = {"file": file, "sha256": sha256_json(effective)}
    ext = AgentExtension(uri=AGENT_EXTENSION, description="The policy and code that answer.")
    params = {"policy": policy, "agent_config": config, "build": build_info()}
    ext.params.update(with_record(params))  # whole numbers stay whole on the card
    return ext


def model_extension(settings: PurpleSettings) -> AgentExtension:
    """The card's record of the model and its request settings (never the key or the URL)."""
    config = agent_config(settings)
    ext = AgentExtension(
        uri=MODEL_EXTENSION,
        description="The LLM purple queries and its request settings.",
    )
    ext.params.update(
        with_record(  # whole numbers stay whole on the card (services/shared/a2a_card.py)
            {
                "model": settings.model,
                "mode": config.mode,
                "context_window": config.context_window,
                "llm_timeout_s": settings.llm_timeout_s,
                "llm_timeout_retries": settings.llm_timeout_retries,
                **config.llm.model_dump(),
                "limits": {
                    "step_limit": config.step_limit,
                    "cost_limit": config.cost_limit,
                    "wall_time_limit_s": config.wall_time_limit_s,
                    "context_budget_tokens": config.context_budget_tokens,
                },
            }
        )
    )
    return ext


def purple_card(settings: PurpleSettings, policy: str) -> AgentCard:
    """Purple's card for the policy named ``policy``."""
    card = build_agent_card(
        name="ARVO RCA agent (purple)",
        description=f"Root-cause analyst for fuzzer crashes (policy: {policy}). Send it an "
        "rca_task from green; it explores through green and submits loc.json. With an LLM it "
        "also works on swe_task, poc_task (an input that reproduces a crash) and fix_task (a "
        "patch); offline it answers a poc_task with the empty input (its floor) and the others with a "
        "reason and no submission.",
        url=settings.reachable_url(),
        version=VERSION,
        skills=[
            AgentSkill(
                id="root_cause_analysis",
                name="Root-cause analysis",
                description="Localize the root cause of a sanitizer crash.",
                tags=["security", "rca", "react"],
            )
        ],
    )
    card.capabilities.extensions.append(agent_extension(settings, policy))
    if settings.effective_policy() == "react":
        card.capabilities.extensions.append(model_extension(settings))
    return card
