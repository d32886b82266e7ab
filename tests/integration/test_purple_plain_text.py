"""A plain-text task (only the description, no data part) works when PURPLE_GREEN_URL is set.

The test plays a minimal third-party orchestrator between green and purple: it receives green's
task message and hands purple only its text, in the same A2A context.
"""

from __future__ import annotations

import pytest
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.types import AgentSkill, Role
from fastapi import FastAPI

from services.purple.app import create_app as create_purple
from services.purple.config import PurpleSettings
from services.shared.a2a import (
    A2APeer,
    build_agent_card,
    message_parts,
    mount_a2a,
    new_protocol_message,
)
from tests.integration.helpers import submit_task, wait_terminal
from tests.support import web
from tests.support.servers import free_port, serve

pytestmark = pytest.mark.docker


class TextOnlyRelay(AgentExecutor):
    def __init__(self, purple_url: str) -> None:
        self.purple_url = purple_url
        self.forwarded: list[str] = []

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        payload = message_parts(context.message)
        assert payload.data is not None  # green sent the structured form too; drop it
        self.forwarded.append(payload.text)
        peer = A2APeer(self.purple_url)
        try:
            await peer.send(
                new_protocol_message(
                    payload.text, None, context_id=context.context_id, role=Role.ROLE_USER
                ),
                return_immediately=True,
            )
        finally:
            await peer.aclose()
        await event_queue.enqueue_event(
            new_protocol_message("forwarded as text", None, context_id=context.context_id)
        )

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None


def test_purple_works_on_a_text_only_task(start_green, green_settings, tmp_path):
    port, relay_port = free_port(), free_port()
    green_url = f"http://127.0.0.1:{green_settings.port}"
    purple = create_purple(
        PurpleSettings(
            port=port,
            policy="stacktrace",
            green_url=green_url,
            log_dir=tmp_path / "logs",
            trajectory_dir=tmp_path / "traj",
        )
    )
    relay = TextOnlyRelay(f"http://127.0.0.1:{port}")
    relay_app = FastAPI()
    mount_a2a(
        relay_app,
        relay,
        build_agent_card(
            name="relay",
            description="text-only relay",
            url=f"http://127.0.0.1:{relay_port}",
            version="0",
            skills=[AgentSkill(id="relay", name="relay", description="relay", tags=["x"])],
        ),
    )
    with serve(purple, port), serve(relay_app, relay_port):
        green = start_green(purple_url=f"http://127.0.0.1:{relay_port}")
        task = submit_task(green.url, {"task": "arvo:900001"})
        done = wait_terminal(green.url, task["id"])
        assert done["status"] == "completed", done["error"]
        assert done["scores"]["file@1"] == 1.0
        assert relay.forwarded and "token:" in relay.forwarded[0]
        ctx = web.get(f"http://127.0.0.1:{port}/tasks/{task['id']}").json()
        assert ctx["status"] == "submitted" and ctx["green_url"] == green_url
