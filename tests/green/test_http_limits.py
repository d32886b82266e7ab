"""The request bounds' parts that need no server: JSON-RPC shape, credentials, the connection
book (the whole middleware is attacked over real HTTP in
tests/integration/test_hostile_purple_http.py)."""

from __future__ import annotations

import json

import pytest

from services.green.config import GreenSettings
from services.green.edge.http_limits import (
    BodyBudget,
    Bounds,
    ConnectionBook,
    Refused,
    Verifier,
    credential,
    parse_rpc,
    task_token,
)

BOUNDS = Bounds(a2a_body=1 << 20, api_body=1 << 16, ui_body=1 << 12, rpc_depth=32,
                rpc_values=1000, per_credential=2)  # fmt: skip


def _rpc(params: str) -> bytes:
    return f'{{"jsonrpc": "2.0", "id": 5, "method": "tasks/get", "params": {params}}}'.encode()


@pytest.mark.parametrize("depth", [40, 900, 2000, 100_000])
def test_deep_params_are_invalid_params_and_a_deep_envelope_an_invalid_request(depth):
    with pytest.raises(Refused) as params:
        parse_rpc(_rpc('{"m": ' + "[" * depth + "]" * depth + "}"), BOUNDS)
    assert "levels deep" in params.value.message
    # past what Python's JSON parser can nest, green cannot say where: the whole request
    assert params.value.rpc_code == (-32602 if depth <= 900 else -32600)
    envelope = b'{"jsonrpc": "2.0", "id": 5, "x": ' + b"[" * depth + b"]" * depth + b"}"
    with pytest.raises(Refused) as whole:
        parse_rpc(envelope, BOUNDS)
    assert whole.value.rpc_code in (-32600, -32602) and "levels deep" in whole.value.message
    if depth <= 900:  # parsed: the id is echoed
        assert params.value.rpc_id == 5


def test_too_many_values_and_fine_requests():
    with pytest.raises(Refused) as many:
        parse_rpc(_rpc(json.dumps({"m": list(range(2000))})), BOUNDS)
    assert "JSON values" in many.value.message
    assert parse_rpc(_rpc('{"id": "x"}'), BOUNDS)["params"] == {"id": "x"}
    assert parse_rpc(b"{not json", BOUNDS) is None  # the SDK answers its own parse error


def test_body_limits_per_route():
    assert BOUNDS.body_limit("POST", "/")[0] == 1 << 20
    assert BOUNDS.body_limit("POST", "/ui/login")[0] == 1 << 12
    assert BOUNDS.body_limit("POST", "/tasks")[0] == 1 << 16
    assert BOUNDS.body_limit("GET", "/")[0] == 1 << 16


def test_a_credential_is_named_without_its_secret():
    data = {"params": {"message": {"parts": [{"kind": "data", "data": {"token": "t0k"}}]}}}
    text = {"params": {"message": {"parts": [{"kind": "text", "text": "execute: id\ntoken: t1"}]}}}
    meta = {"params": {"message": {"metadata": {"token": "t2"}, "parts": []}}}
    assert [task_token(b) for b in (data, text, meta, {"params": []}, None)] == [
        "t0k", "t1", "t2", None, None
    ]  # fmt: skip
    scope = {"headers": [(b"authorization", b"Bearer op")], "client": ("10.0.0.1", 5)}
    assert credential(scope).startswith("bearer:") and "op" not in credential(scope)
    cookie = {"headers": [(b"cookie", b"a=b; arena_ui_session=sid")], "client": ("h", 1)}
    assert credential(cookie).startswith("session:")
    anonymous = {"headers": [], "client": ("10.0.0.9", 7)}
    assert credential(anonymous, data).startswith("task:")
    assert credential(anonymous) == "anonymous:10.0.0.9"


def test_the_connection_book_bounds_each_credential_and_forgets_closed_connections():
    book = ConnectionBook()
    keys = [(("green", 1), ("client", port)) for port in range(4)]
    for key in keys:
        book.opened(key)
    assert book.claim(keys[0], "agent", 2) and book.claim(keys[1], "agent", 2)
    assert book.claim(keys[1], "agent", 2)  # its own connection again
    assert not book.claim(keys[2], "agent", 2)  # a third
    assert book.claim(keys[2], "operator", 2)  # others are not affected
    book.closed(keys[0])
    assert book.claim(keys[3], "agent", 2)
    assert book.claim((("other", 1), ("c", 1)), "agent", 2)  # not green's server: not counted
    assert book.count == {"agent": 2, "operator": 1}


def test_a_made_up_credential_counts_as_its_callers_address():
    strict = Verifier(operator=lambda h: h == "Bearer op", session=lambda s: False,
                      task=lambda t: t == "real")  # fmt: skip
    fake = {"headers": [(b"authorization", b"Bearer guess-1")], "client": ("10.0.0.9", 7)}
    body = {"params": {"message": {"metadata": {"token": "guess-2"}, "parts": []}}}
    assert credential(fake, body, strict) == "anonymous:10.0.0.9"
    real = {"params": {"message": {"metadata": {"token": "real"}, "parts": []}}}
    assert credential(fake, real, strict).startswith("task:")
    operator = {"headers": [(b"authorization", b"Bearer op")], "client": ("10.0.0.9", 8)}
    assert credential(operator, None, strict).startswith("bearer:")


def test_body_bytes_are_reserved_per_caller_and_for_anonymous_callers_together():
    budget = BodyBudget(per_caller=10, anonymous=15)
    budget.reserve("anonymous:10.0.0.1", 8)
    with pytest.raises(Refused) as caller:
        budget.reserve("anonymous:10.0.0.1", 3)  # 11 > its 10
    assert caller.value.status == 429 and "GREEN_BODY_BYTES_PER_CALLER" in caller.value.message
    budget.reserve("anonymous:10.0.0.2", 7)
    with pytest.raises(Refused) as crowd:
        budget.reserve("anonymous:10.0.0.3", 1)  # 16 > all anonymous callers' 15
    assert "GREEN_BODY_BYTES_ANONYMOUS" in crowd.value.message
    budget.reserve("bearer:op", 10)  # the operator is not in the anonymous bound
    budget.reserve("anonymous:10.0.0.3", 0)  # no body: nothing to hold
    budget.release("anonymous:10.0.0.1", 8)
    budget.reserve("anonymous:10.0.0.3", 8)
    for who, size in (("anonymous:10.0.0.2", 7), ("anonymous:10.0.0.3", 8), ("bearer:op", 10)):
        budget.release(who, size)
    assert (budget.held, budget.anonymous_held) == ({}, 0)


def test_a_body_larger_than_green_accepts_cannot_fit_its_callers_bound():
    with pytest.raises(ValueError, match="GREEN_BODY_BYTES_PER_CALLER"):
        GreenSettings(a2a_body_max_bytes=8 << 20, body_bytes_per_caller=4 << 20)
    with pytest.raises(ValueError, match="GREEN_BODY_BYTES_ANONYMOUS"):
        GreenSettings(body_bytes_per_caller=32 << 20, body_bytes_anonymous=16 << 20)


def test_a_task_token_as_an_mcp_bearer_is_the_same_credential_as_in_an_a2a_message():
    strict = Verifier(operator=lambda h: h == "Bearer op", session=lambda s: False,
                      task=lambda t: t == "real")  # fmt: skip
    mcp = {"headers": [(b"authorization", b"Bearer real")], "client": ("10.0.0.9", 7)}
    a2a = {"params": {"message": {"metadata": {"token": "real"}, "parts": []}}}
    anonymous = {"headers": [], "client": ("10.0.0.8", 7)}
    assert credential(mcp, None, strict) == credential(anonymous, a2a, strict)  # one bound
    assert credential(mcp, None, strict).startswith("task:") and "real" not in credential(mcp)
    guess = {"headers": [(b"authorization", b"Bearer guess")], "client": ("10.0.0.9", 7)}
    assert credential(guess, None, strict) == "anonymous:10.0.0.9"
    assert BOUNDS.body_limit("POST", "/mcp") == BOUNDS.body_limit("POST", "/")
