"""Green's MCP server: each running task's agent plane at ``/mcp`` (streamable HTTP), for the
holder of the task's token as ``Authorization: Bearer <task token>``.

The official ``mcp`` SDK serves it: its low-level server (the tools are the task's, so they are
listed per request), its session manager in stateless mode with JSON answers (every request is
authenticated by its own bearer, nothing is held between requests: one task's agent plane over
MCP and A2A is one plane, with one command at a time and one record), and its bearer middleware
over a verifier that knows green's running tasks. A wrong or ended token is refused with one
sentence before the SDK reads the request, the same sentence A2A gives.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager

import mcp_types as types
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware, get_access_token
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, BearerAuthBackend
from mcp.server.auth.provider import AccessToken
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from services.green.config import GreenSettings
from services.green.edge.http_limits import rpc_error, send_json
from services.green.mcp.tools import TaskTools
from services.green.tasks.agent_plane import task_of_token
from services.green.tasks.live_task import NOT_SERVED, LiveTasks

PATH = "/mcp"
INSTRUCTIONS = (
    "The agent plane of one task of the arena: a shell in the task's container and the task's "
    "submit. The tools' descriptions carry the task's rules and limits."
)


class TaskTokens:
    """The SDK's token verifier over green's running tasks: a token is valid while this process
    holds its task (whether the task still serves requests is the request's to say)."""

    def __init__(self, tasks: LiveTasks) -> None:
        self.tasks = tasks

    async def verify_token(self, token: str) -> AccessToken | None:
        live = task_of_token(self.tasks, token)
        if live is None:
            return None
        return AccessToken(token=token, client_id=live.id, subject=live.id, scopes=[])


class RequireTaskToken:
    """A request without a valid task token is answered 401 with a JSON-RPC error that says
    green's own sentence (an MCP client shows a JSON-RPC error's message; the SDK's own 401
    body is OAuth's, which clients show as a bare "error response")."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if isinstance(scope.get("user"), AuthenticatedUser):
            await self.app(scope, receive, send)
            return
        error = rpc_error(None, types.INVALID_REQUEST, NOT_SERVED)
        await send_json(send, 401, error, [(b"www-authenticate", b'Bearer error="invalid_token"')])


class McpPlane:
    """The MCP face: its ASGI app (mounted at :data:`PATH`) and the session manager's run, which
    green's lifespan enters."""

    def __init__(self, tasks: LiveTasks, settings: GreenSettings, version: str) -> None:
        self.tasks, self.settings = tasks, settings
        self.server: Server = Server(
            "arena-green",
            version=version,
            instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )
        self.manager = StreamableHTTPSessionManager(
            app=self.server,
            json_response=True,
            stateless=True,
            max_request_body_size=settings.a2a_body_max_bytes,
        )
        guarded: ASGIApp = RequireTaskToken(StreamableHTTPASGIApp(self.manager))
        self.app: ASGIApp = AuthenticationMiddleware(
            AuthContextMiddleware(guarded), backend=BearerAuthBackend(TaskTokens(tasks))
        )

    def run(self) -> AbstractAsyncContextManager[None]:
        return self.manager.run()

    def route(self) -> Route:
        return Route(PATH, endpoint=self.app)

    def _tools(self) -> TaskTools | None:
        """The tools of the task the request's bearer names (None: it no longer names one)."""
        access = get_access_token()
        live = task_of_token(self.tasks, access.token) if access is not None else None
        if live is None or access is None:
            return None
        return TaskTools(self.tasks, live, access.token, self.settings)

    async def _list_tools(
        self, _: ServerRequestContext, __: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        tools = self._tools()
        return types.ListToolsResult(tools=tools.listed() if tools is not None else [])

    async def _call_tool(
        self, _: ServerRequestContext, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        tools = self._tools()
        if tools is None:
            return types.CallToolResult(
                content=[types.TextContent(text=f"Refused: {NOT_SERVED}")], is_error=True
            )
        return await tools.call(params.name, dict(params.arguments or {}))
