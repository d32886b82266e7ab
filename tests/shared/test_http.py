"""Every HTTP client of a process shares one TLS context: httpx would parse certifi's bundle of
root certificates again for each client (42 ms of CPU here), and green and purple make clients
per task (services/shared/http.py)."""

from __future__ import annotations

import ssl

import pytest

from services.arena.tasks_client import Green
from services.purple.llm.openai_chat import OpenAIChatModel, OpenAIModelConfig
from services.shared.a2a import A2APeer
from services.shared.http import tls_context


@pytest.fixture
def bundles_parsed(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every parse of a bundle of root certificates from now on (a real context is built
    first, so that the shared one exists before the count starts)."""
    tls_context(), tls_context(trust_env=False)
    parsed: list[object] = []
    real = ssl.SSLContext.load_verify_locations

    def counting(self: ssl.SSLContext, *args: object, **kwargs: object) -> None:
        parsed.append(args or kwargs)
        real(self, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counting)
    return parsed


async def test_clients_made_per_task_parse_no_bundle(bundles_parsed: list[object]) -> None:
    peers = [A2APeer(f"http://127.0.0.1:{9000 + i}") for i in range(3)]  # green's, purple's
    green = Green("http://127.0.0.1:9009", token="t")  # the arena client's
    model = OpenAIChatModel(OpenAIModelConfig(model="m", base_url="http://127.0.0.1:9/v1"))
    assert bundles_parsed == []  # the model's OpenAI client (one per task) included
    await model.client.close()
    for peer in peers:
        await peer.aclose()
    green.http.close()


def test_the_shared_context_verifies_like_httpx_default() -> None:
    ctx = tls_context()
    assert ctx is tls_context() is tls_context(True) is tls_context(trust_env=True)
    assert ctx.verify_mode == ssl.CERT_REQUIRED and ctx.check_hostname
    assert ctx.get_ca_certs()  # the roots are loaded
    assert tls_context(trust_env=False) is not ctx
