"""What strict A2A clients expect of green and purple, written from the A2A compatibility kit's
expectations (a2aproject/a2a-tck): each security scheme of the 1.0 card has exactly one key (its
kind) and a 0.3 client gets the 0.3 form; ``ListTasks`` with an unknown status is -32602 (not an
empty list); on the 0.3 path a well-formed request with invalid params is -32602 (not -32600).
"""

from __future__ import annotations

import pytest
from a2a.compat.v0_3 import types as types_v03
from a2a.types import AgentCard
from google.protobuf.json_format import ParseDict

from services.shared.protocol import MODEL_EXTENSION
from tests.integration.helpers import OPERATOR, rpc
from tests.support import web
from tests.support.scripted_purple import Script

pytestmark = pytest.mark.docker

KINDS_10 = {
    "apiKeySecurityScheme",
    "httpAuthSecurityScheme",
    "oauth2SecurityScheme",
    "openIdConnectSecurityScheme",
    "mtlsSecurityScheme",
}


@pytest.fixture
def services(start_green, scripted_purple) -> dict[str, str]:
    purple_url, _ = scripted_purple(Script(commands=[], submissions=[]))
    return {"green": start_green().url, "purple": purple_url}


def test_green_card_form_follows_the_version_asked_for(start_green):
    """``A2A-Version: 1.0``: the strict 1.0 card. No header (a 0.3 client sends none, and no
    header means 0.3): the 0.3 card, which before was the 1.0 form a 0.3 client read as mutual
    TLS; its 1.0 interface is listed too, so a 1.0 client that sends no header still finds it."""
    url = start_green().url
    card = web.get(f"{url}/.well-known/agent-card.json", headers={"A2A-Version": "1.0"}).json()
    schemes = card["securitySchemes"]
    assert schemes, "green declares its operator scheme"
    for name, scheme in schemes.items():
        assert len(scheme) == 1, f"{name}: one key (its kind) in 1.0, got {sorted(scheme)}"
        (kind,) = scheme
        assert kind in KINDS_10
    assert schemes["operator"]["httpAuthSecurityScheme"]["scheme"].lower() == "bearer"
    # Strict protobuf parsing (no unknown field allowed) of the 1.0 parts.
    ParseDict({"securitySchemes": schemes, "skills": card["skills"]}, AgentCard())
    ParseDict(
        {k: v for k, v in card.items() if k in AgentCard.DESCRIPTOR.fields_by_camelcase_name},
        AgentCard(),
    )

    plain = web.get(f"{url}/.well-known/agent-card.json", timeout=10).json()
    for legacy in (
        plain,
        web.get(f"{url}/.well-known/agent.json", timeout=10).json(),
        web.get(f"{url}/.well-known/agent-card.json", headers={"A2A-Version": "0.3"}).json(),
    ):
        op = legacy["securitySchemes"]["operator"]
        assert (op["type"], op["scheme"].lower()) == ("http", "bearer")
        assert not set(op) & KINDS_10, op
        parsed = types_v03.AgentCard.model_validate(legacy)
        assert parsed.url.startswith(url) and parsed.protocol_version.startswith("0.3")
    versions = {i["protocolVersion"] for i in plain["supportedInterfaces"]}
    assert versions == {"1.0", "0.3"}, plain["supportedInterfaces"]


def test_whole_numbers_are_integers_in_purples_card(llm_purple):
    """The model extension's params (context window, limits) are a protobuf Struct, which keeps
    every number as a double: they read ``96000.0`` in the card (and so in each task's
    provenance) before; in each form they read as the settings had them."""
    purple = llm_purple(context_window=96000)
    for headers in ({}, {"A2A-Version": "1.0"}):
        card = web.get(f"{purple.url}/.well-known/agent-card.json", headers=headers).json()
        exts = {e["uri"]: e for e in card["capabilities"]["extensions"]}
        params = exts[MODEL_EXTENSION]["params"]
        assert type(params["context_window"]) is int and params["context_window"] == 96000
        assert type(params["limits"]["step_limit"]) is int, params["limits"]
        assert not any(k.startswith("arena.") for e in exts.values() for k in e["params"])


@pytest.mark.parametrize(
    ("method", "version"),
    [("GetTask", None), ("tasks/get", "1.0"), ("ListTasks", "2.0"), ("tasks/cancel", None)],
)
def test_an_anonymous_call_is_answered_401_before_any_version_error(start_green, method, version):
    """Authentication first: before, ``GetTask`` without a version header answered an
    anonymous caller with -32009 (version not supported) instead of its 401."""
    url = start_green().url
    r = rpc(url, method, {"id": "x"}, version=version)
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer", r.text
    assert "the operator's credential is required" in r.json()["error"]["message"]


def test_0_3_tasks_list_is_method_not_found_whatever_its_status(start_green):
    """0.3 has no tasks/list: -32601 with a valid status and with an invalid one alike (an
    invalid one answered -32602 before)."""
    url = start_green().url
    for status in ("completed", "INVALID_STATUS"):
        r = rpc(url, "tasks/list", {"status": status}, headers=OPERATOR)
        assert r.json()["error"]["code"] == -32601, r.text


@pytest.mark.parametrize("service", ["green", "purple"])
def test_list_tasks_with_an_unknown_status_is_invalid_params(services, service):
    url = services[service]
    r = rpc(url, "ListTasks", {"status": "INVALID_STATUS"}, headers=OPERATOR, version="1.0")
    assert r.json().get("error", {}).get("code") == -32602, r.text
    r = rpc(url, "ListTasks", {"status": 7}, headers=OPERATOR, version="1.0")
    assert r.json().get("error", {}).get("code") == -32602, r.text
    ok = rpc(url, "ListTasks", {"status": "TASK_STATE_COMPLETED"}, headers=OPERATOR, version="1.0")
    assert "result" in ok.json(), ok.text


@pytest.mark.parametrize("service", ["green", "purple"])
def test_0_3_request_with_invalid_params_is_invalid_params(services, service):
    url = services[service]
    r = rpc(url, "message/send", {"message": "not a message"}, headers=OPERATOR)
    assert r.json()["error"]["code"] == -32602, r.text
    r = rpc(url, "tasks/get", {"id": 5, "historyLength": "many"}, headers=OPERATOR)
    assert r.json()["error"]["code"] == -32602, r.text
    # A malformed envelope stays -32600 (Invalid Request).
    bad = web.post(f"{url}/", json={"jsonrpc": "1.0", "id": 1, "method": "tasks/get"}, timeout=10)
    assert bad.json()["error"]["code"] == -32600, bad.text
