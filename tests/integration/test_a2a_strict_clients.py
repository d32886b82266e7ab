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


def test_green_card_security_schemes_suit_strict_1_0_and_0_3_clients(start_green):
    url = start_green().url
    card = web.get(f"{url}/.well-known/agent-card.json", timeout=10).json()
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

    for legacy in (
        web.get(f"{url}/.well-known/agent.json", timeout=10).json(),
        web.get(f"{url}/.well-known/agent-card.json", headers={"A2A-Version": "0.3"}).json(),
    ):
        op = legacy["securitySchemes"]["operator"]
        assert (op["type"], op["scheme"].lower()) == ("http", "bearer")
        assert not set(op) & KINDS_10, op
        parsed = types_v03.AgentCard.model_validate(legacy)
        assert parsed.url.startswith(url) and parsed.protocol_version.startswith("0.3")


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
