"""An AgentBeats-era peer: runs under a2a-sdk 0.3.x (a separate virtual environment).

usage: python a2a03_client.py poll|stream GREEN_URL TEXT [PURPLE_URL]
Reads green's card the 0.3 way and sends TEXT as a user message, then either
  poll:   non-streaming, blocking=false, polls tasks/get until the task ends;
  stream: message/stream, reading every status update and artifact (what the AgentBeats
          gateway does with an assessment request),
and prints one JSON line: card fields, final state, number of status updates, the Result data.
The card is read with no A2A-Version header (a 0.3 client sends none); the operator token, when
the environment has GREEN_API_TOKEN, goes where the card's security scheme says, as 0.3 reads it
('Authorization: Bearer' for an http bearer scheme; a scheme it cannot use fails the run).
"""

import asyncio
import json
import os
import sys
import uuid

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import Message, MessageSendConfiguration, Part, Role, TaskQueryParams, TextPart


async def main(mode: str, green_url: str, text: str, purple_url: str | None) -> None:
    token = os.environ.get("GREEN_API_TOKEN")
    async with httpx.AsyncClient(timeout=300) as http:
        card = await A2ACardResolver(http, green_url).get_agent_card()
        schemes = {
            name: scheme.root.model_dump(mode="json", exclude_none=True)
            for name, scheme in (card.security_schemes or {}).items()
        }
        if token:
            for scheme in schemes.values():
                if scheme.get("type") != "http" or scheme.get("scheme", "").lower() != "bearer":
                    sys.exit(f"the card's scheme is not http bearer as 0.3 reads it: {scheme}")
            http.headers["Authorization"] = f"Bearer {token}"
        streaming = mode == "stream"
        client = ClientFactory(
            ClientConfig(streaming=streaming, polling=not streaming, httpx_client=http)
        ).create(card)
        msg = Message(
            role=Role.user,
            message_id=uuid.uuid4().hex,
            parts=[Part(root=TextPart(text=text))],
            metadata={"purple_url": purple_url} if purple_url else None,
        )
        task, updates = None, 0
        config = None if streaming else MessageSendConfiguration(blocking=False)
        async for event in client.send_message(msg, configuration=config):
            if isinstance(event, tuple):
                task = event[0]
                updates += event[1] is not None and event[1].kind == "status-update"
        assert task is not None, "green answered with no task"
        for _ in range(600):
            if task.status.state.value in ("completed", "failed", "canceled", "rejected"):
                break
            await asyncio.sleep(0.5)
            task = await client.get_task(TaskQueryParams(id=task.id))
        result = None
        for artifact in task.artifacts or []:
            if artifact.name == "Result":
                result = next((p.root.data for p in artifact.parts if p.root.kind == "data"), None)
        print(
            json.dumps(
                {
                    "card_url": card.url,
                    "card_name": card.name,
                    "protocol": card.protocol_version,
                    "schemes": schemes,
                    "state": task.status.state.value,
                    "updates": updates,
                    "result": result,
                }
            )
        )


if __name__ == "__main__":
    asyncio.run(
        main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else None)
    )
