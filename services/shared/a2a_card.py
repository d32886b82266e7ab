"""The agent card in the form of the protocol version the caller asks for.

The SDK serves one card that merges the 1.0 fields with the 0.3 ones, deep into each security
scheme: ``{"httpAuthSecurityScheme": {...}, "type": "http", "scheme": "bearer", ...}``, four keys
where 1.0 expects exactly one (the scheme's kind) and 0.3 expects ``type`` and its fields. No
single object satisfies both, and a request without an ``A2A-Version`` header is a 0.3 request
(an a2a-sdk 0.3 client sends none, and read the 1.0 form's bearer scheme as mutual TLS), so:

- ``/.well-known/agent-card.json`` asked with ``A2A-Version: 1.x``: the 1.0 card (every nested
  object in its 1.0 form) plus the 0.3 top-level fields, which 1.0 clients ignore;
- asked without the header (or with ``0.3``): the 0.3 card, every nested object in its 0.3 form,
  plus the 1.0 ``supportedInterfaces`` (which 0.3 clients ignore), so that a 1.0 client that
  sends no header either (a2a-sdk 1.x's resolver, which reads 0.3 schemes and skills) still
  finds the 1.0 interface;
- ``/.well-known/agent.json`` (the 0.3-era path): the pure 0.3 card.

Whole numbers stay whole in each form: a card extension's params made with
:func:`services.shared.a2a_numbers.with_record` are read back with their integers.
"""

from __future__ import annotations

from typing import Any

from a2a.compat.v0_3.conversions import to_compat_agent_card
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.types import AgentCard, AgentSkill
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from services.shared.a2a_numbers import restore_record

CARD_PATH = "/.well-known/agent-card.json"
LEGACY_CARD_PATH = "/.well-known/agent.json"


def card_v10(card: AgentCard) -> dict[str, Any]:
    """The merged card with every nested object in its strict 1.0 form: each security scheme
    reduced to its one 1.0 key, the skills without their 0.3 ``security``. Only the top level
    keeps 0.3 fields (a 0.3 client needs ``url``; 1.0 clients skip them)."""
    doc = agent_card_to_dict(card)
    for name, scheme in list((doc.get("securitySchemes") or {}).items()):
        kinds = {k: v for k, v in scheme.items() if k.endswith("SecurityScheme")}
        doc["securitySchemes"][name] = kinds or scheme
    skill_fields = set(AgentSkill.DESCRIPTOR.fields_by_camelcase_name)
    doc["skills"] = [
        {k: v for k, v in skill.items() if k in skill_fields} for skill in doc.get("skills", [])
    ]
    return doc


def card_v03(card: AgentCard) -> dict[str, Any]:
    """The card as a 0.3 client reads it (0.3 field names and security scheme form only)."""
    doc = to_compat_agent_card(card).model_dump(exclude_none=True, by_alias=True)
    if not doc.get("supportsAuthenticatedExtendedCard"):
        doc.pop("supportsAuthenticatedExtendedCard", None)
    return doc


def _whole(doc: dict[str, Any]) -> dict[str, Any]:
    """The card with its extensions' params read back with their integers."""
    for ext in (doc.get("capabilities") or {}).get("extensions") or []:
        if isinstance(ext, dict) and isinstance(ext.get("params"), dict):
            ext["params"] = restore_record(ext["params"])
    return doc


def card_for(card: AgentCard, version: str) -> dict[str, Any]:
    """The card as a client of ``version`` (its ``A2A-Version`` header; empty: none) reads it."""
    if version.startswith("1."):
        return _whole(card_v10(card))
    doc = card_v03(card)
    doc["supportedInterfaces"] = card_v10(card)["supportedInterfaces"]
    return _whole(doc)


def card_routes(card: AgentCard) -> list[Route]:
    async def current(request: Request) -> JSONResponse:
        return JSONResponse(card_for(card, request.headers.get("a2a-version", "").strip()))

    async def legacy(request: Request) -> JSONResponse:
        return JSONResponse(_whole(card_v03(card)))

    return [
        Route(CARD_PATH, current, methods=["GET"]),
        Route(LEGACY_CARD_PATH, legacy, methods=["GET"]),
    ]
