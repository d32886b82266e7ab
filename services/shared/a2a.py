"""A2A plumbing both services use: the agent card, mounting the routes, and a small client.

Both protocol versions are served (docs/protocol.md): JSON-RPC at ``/`` with the 0.3 compatibility
layer on, and a card that lists a 1.0 and a 0.3 JSONRPC interface at the same URL.
Every protocol message has a text part (what a person or an LLM reads) and a data part (the
same content structured); :func:`message_parts` reads both back.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import httpx
from a2a.client import A2ACardResolver, ClientCallContext, ClientConfig, ClientFactory
from a2a.helpers import get_data_parts, get_text_parts, new_text_part
from a2a.server.agent_execution import AgentExecutor
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import (
    ServerCallContextBuilder,
    add_a2a_routes_to_fastapi,
    create_jsonrpc_routes,
)
from a2a.server.tasks import InMemoryTaskStore, TaskStore
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Role,
    SendMessageRequest,
    Task,
    TaskState,
)
from fastapi import FastAPI
from google.protobuf.json_format import MessageToDict

from services.shared.a2a_card import card_routes
from services.shared.a2a_numbers import WholeNumbers, data_part
from services.shared.a2a_params import InvalidParams
from services.shared.http import async_client


def build_agent_card(
    *, name: str, description: str, url: str, version: str, skills: list[AgentSkill]
) -> AgentCard:
    url = url.rstrip("/") + "/"
    return AgentCard(
        name=name,
        description=description,
        version=version,
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0"),
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="0.3"),
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain", "application/json"],
        skills=skills,
    )


ENDED_KEPT = 256
"""A2A tasks that ended which a service still answers ``tasks/get`` about (the newest ones)."""
_ENDED_STATES = (
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_REJECTED,
)


class RecentTaskStore(InMemoryTaskStore):
    """The SDK's in-memory task store, keeping every task under way but only the newest
    ``keep`` of those that ended: a service that runs for days does not hold every task it has
    served (purple's memory grew by about 12 KB a task)."""

    def __init__(self, keep: int = ENDED_KEPT) -> None:
        super().__init__()
        self.keep = keep
        self._ended: OrderedDict[str, ServerCallContext] = OrderedDict()
        """Ended tasks, oldest first, with the context that saved them (it names the owner)."""

    async def save(self, task: Task, context: ServerCallContext) -> None:
        await super().save(task, context)
        if task.status.state in _ENDED_STATES:
            self._ended[task.id] = context
            self._ended.move_to_end(task.id)
            while len(self._ended) > self.keep:
                task_id, saved_by = self._ended.popitem(last=False)
                await super().delete(task_id, saved_by)

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        self._ended.pop(task_id, None)
        await super().delete(task_id, context)


def mount_a2a(
    app: FastAPI,
    executor: AgentExecutor,
    card: AgentCard,
    task_store: TaskStore | None = None,
    *,
    handler_class: type[DefaultRequestHandler] = DefaultRequestHandler,
    handler_options: dict[str, Any] | None = None,
    context_builder: ServerCallContextBuilder | None = None,
) -> DefaultRequestHandler:
    """Card at /.well-known/agent-card.json (and the 0.3-era /.well-known/agent.json), JSON-RPC at /.

    A service that gates requests passes its own ``handler_class`` (with ``handler_options``) and
    a ``context_builder`` that names the caller; the task store is scoped by that name."""
    handler = handler_class(
        agent_executor=executor,
        task_store=task_store or RecentTaskStore(),
        agent_card=card,
        **(handler_options or {}),
    )
    add_a2a_routes_to_fastapi(
        app,
        agent_card_routes=card_routes(card),  # each version's own form (services/shared/a2a_card)
        jsonrpc_routes=create_jsonrpc_routes(
            handler, rpc_url="/", enable_v0_3_compat=True, context_builder=context_builder
        ),
    )
    app.add_middleware(WholeNumbers, path="/")  # integers of data parts stay integers
    app.add_middleware(InvalidParams, path="/")  # -32602 where strict clients expect it
    return handler


# ---- messages -----------------------------------------------------------------------------


def new_protocol_message(
    text: str,
    data: dict[str, Any] | None = None,
    *,
    context_id: str | None = None,
    task_id: str | None = None,
    role: Role = Role.ROLE_AGENT,
    metadata: dict[str, Any] | None = None,
) -> Message:
    parts = [new_text_part(text)]
    if data is not None:
        parts.append(data_part(data))
    msg = Message(
        role=role,
        parts=parts,
        message_id=str(uuid.uuid4()),
        context_id=context_id,
        task_id=task_id,
    )
    if metadata:
        msg.metadata.update(metadata)
    return msg


@dataclass
class Payload:
    """What a message carries, read back from its parts."""

    text: str = ""
    data: dict[str, Any] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


def message_parts(message: Message | None) -> Payload:
    if message is None:
        return Payload()
    data = next((d for d in get_data_parts(message.parts) if isinstance(d, dict)), None)
    metadata = MessageToDict(message.metadata) if message.HasField("metadata") else {}
    return Payload(text="\n".join(get_text_parts(message.parts)), data=data, metadata=metadata)


# ---- client -------------------------------------------------------------------------------


class A2APeer:
    """A reusable JSON-RPC client for one peer (keep-alive HTTP, card fetched once).

    It always calls the base URL it was given, whatever the card advertises (as the AgentBeats
    gateway does): behind docker compose or a proxy the card names the public address, while a
    neighbour reaches the service by another name. ``send`` blocks until the peer answers with a
    Message or a Task; ``return_immediately`` asks for the Task at once, still in progress.
    """

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = 60.0,
        http: httpx.AsyncClient | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._owns_http = http is None
        self._http = http or async_client(
            timeout=httpx.Timeout(timeout, connect=10.0), headers=headers
        )
        self._client: Any = None

    @property
    def has_card(self) -> bool:
        """Whether the peer's card was read: until it is, no message can have reached it."""
        return self._client is not None

    async def _get(self) -> Any:
        if self._client is None:
            card = await A2ACardResolver(self._http, self.base_url).get_agent_card()
            for interface in card.supported_interfaces:
                interface.url = self.base_url + "/"
            factory = ClientFactory(ClientConfig(streaming=False, httpx_client=self._http))
            self._client = factory.create(card)
        return self._client

    async def send(
        self,
        message: Message,
        *,
        return_immediately: bool = False,
        headers: dict[str, str] | None = None,
    ) -> Message | Task:
        """``headers``: extra HTTP headers of this request (a trace's ``traceparent``)."""
        client = await self._get()
        request = SendMessageRequest(message=message)
        request.configuration.return_immediately = return_immediately
        context = ClientCallContext(service_parameters=headers) if headers else None
        async for event in client.send_message(request, context=context):
            if event.HasField("message"):
                return event.message
            if event.HasField("task"):
                return event.task
        raise RuntimeError(f"{self.base_url} answered with neither a message nor a task")

    async def get_task(self, task_id: str) -> Task:
        client = await self._get()
        return await client.get_task(GetTaskRequest(id=task_id))

    async def cancel_task(self, task_id: str) -> Task:
        """``tasks/cancel``: the peer stops the task; its task as it ended."""
        client = await self._get()
        return await client.cancel_task(CancelTaskRequest(id=task_id))

    async def aclose(self) -> None:
        if self._owns_http:  # a client passed in belongs to the caller
            await self._http.aclose()
