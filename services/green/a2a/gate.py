"""Who may do what on green's A2A endpoint, decided before any work starts.

One JSON-RPC endpoint serves two planes. The *agent plane* is ``execute``/``submit`` inside a
running task: anyone may send it, and the orchestrator checks the task's own token. Everything
else is the *operator plane*: starting tasks or assessments, and reading, listing, cancelling or
resubscribing to A2A tasks. It needs the operator token as ``Authorization: Bearer`` (unless
GREEN_OPEN_OPERATOR_PLANE is on), and A2A tasks belong to the credential that created them (the
SDK's task store is scoped by the caller's name).

Each message is classified here once; the executor reads the verdict from the call context.
Bad input is refused with JSON-RPC invalid-params and a sentence; refusals for a missing
credential or a bound also set the HTTP status (401, 429), so plain HTTP clients see them too.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Callable
from typing import Any

from a2a.auth.user import User
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import DefaultServerCallContextBuilder
from a2a.utils.errors import A2AError, InternalError, InvalidParamsError, InvalidRequestError
from pydantic import ValidationError
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from services.green.a2a.requests import (
    Assessment,
    Classified,
    ProtocolRequest,
    StartTask,
    Unknown,
    classify,
)
from services.green.assessments.runner import AssessmentRequest
from services.green.edge.auth import Caller, OperatorAuth
from services.green.edge.http_limits import rpc_error, send_json
from services.green.edge.intake_limits import BugBusy, IntakeLimits, TooBusy
from services.green.store.errors import OPERATOR_SENTENCE, RETRY_AFTER_S, STORAGE_ERRORS
from services.shared.a2a import message_parts
from services.shared.a2a_params import read_body, replaying
from services.shared.logging import get_logger

log = get_logger("services.green.a2a")

VERDICT = "arena.request"
"""Call-context key of the classified request (a :data:`Classified`)."""
INTAKE = "arena.intake"
"""Call-context key of the :class:`AssessmentRequest` an intake message asks for."""
_HTTP = "arena.http"
"""ASGI scope key: the HTTP status and headers a refusal should carry."""


class ArenaUser(User):
    """The A2A SDK's view of a :class:`Caller`: its name scopes the caller's A2A tasks."""

    def __init__(self, caller: Caller) -> None:
        self.caller = caller

    @property
    def is_authenticated(self) -> bool:
        return self.caller.operator

    @property
    def user_name(self) -> str:
        return self.caller.name


UNAUTHENTICATED = "the operator's credential is required: send 'Authorization: Bearer <token>'"


class CallContextBuilder(DefaultServerCallContextBuilder):
    """Adds the caller (from the bearer token) and the ASGI scope (for refusals' HTTP status)."""

    def __init__(self, auth: OperatorAuth) -> None:
        self.auth = auth

    def build_user(self, request: Request) -> User:
        return ArenaUser(self.auth.caller(request.headers.get("authorization")))

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        context.state["scope"] = request.scope
        return context


def caller_of(context: ServerCallContext) -> Caller:
    user = context.user
    return user.caller if isinstance(user, ArenaUser) else Caller("anonymous", False, False)


def _refuse(context: ServerCallContext, error: A2AError, status: int, **headers: str) -> A2AError:
    if (scope := context.state.get("scope")) is not None:
        scope[_HTTP] = (status, headers)
    return error


def require_operator(context: ServerCallContext) -> Caller:
    caller = caller_of(context)
    if not caller.may_operate:
        raise _refuse(
            context, InvalidRequestError(UNAUTHENTICATED), 401, **{"WWW-Authenticate": "Bearer"}
        )
    return caller


def _internal(context: ServerCallContext, exc: Exception) -> A2AError:
    """A JSON-RPC error for a failure of green itself: one sentence, never its text (it may
    name hosts and libraries); the database away is 503 with ``Retry-After``."""
    if isinstance(exc, STORAGE_ERRORS):
        log.error("a2a.storage_failed", error=str(exc))
        return _refuse(
            context, InternalError(OPERATOR_SENTENCE), 503, **{"Retry-After": str(RETRY_AFTER_S)}
        )
    log.error("a2a.failed", error=f"{type(exc).__name__}: {exc}")
    return InternalError("green had an internal error")


class GreenRequestHandler(DefaultRequestHandler):
    """The SDK's handler with green's gates in front of every method."""

    def __init__(
        self,
        *args: Any,
        intake: IntakeLimits,
        allowed_purple: Callable[[str | None], str],
        **kw: Any,
    ) -> None:
        super().__init__(*args, **kw)
        self.intake = intake
        self.allowed_purple = allowed_purple
        """Raises ValueError for a purple URL green may not call."""

    # ---- messages: the agent plane for anyone, intake for the operator ----

    async def _admit_message(self, params: Any, context: ServerCallContext) -> None:
        if params.message.task_id:  # only an operator may address an A2A task at all
            require_operator(context)
            raise InvalidParamsError(
                message="green's A2A tasks take no follow-up messages; start a new one"
            )
        try:
            verdict = classify(message_parts(params.message))
        except ValueError as exc:
            raise InvalidParamsError(message=str(exc)) from exc
        context.state[VERDICT] = verdict
        if isinstance(verdict, ProtocolRequest | Unknown):
            return
        caller = require_operator(context)
        request = _intake_request(verdict)
        try:
            self.allowed_purple(request.purple_url)
            await self.intake.admit(caller, request.task_ids, request.trials)
        except BugBusy as exc:
            raise _refuse(context, InvalidRequestError(str(exc)), 409) from exc
        except TooBusy as exc:
            raise _refuse(
                context, InvalidRequestError(str(exc)), 429, **{"Retry-After": str(exc.retry_after)}
            ) from exc
        except ValueError as exc:
            raise InvalidParamsError(message=str(exc)) from exc
        context.state[INTAKE] = request

    async def on_message_send(self, params: Any, context: ServerCallContext) -> Any:
        try:
            await self._admit_message(params, context)
            verdict = context.state[VERDICT]
            answer = getattr(self.agent_executor, "answer", None)
            if isinstance(verdict, ProtocolRequest) and answer is not None:
                # the agent plane's one reply Message, without the SDK's task machinery (an
                # execute/submit never becomes an A2A task): the command's shortest path
                return await answer(params.message.context_id, verdict)
            return await super().on_message_send(params, context)
        except A2AError:
            raise
        except Exception as exc:
            raise _internal(context, exc) from exc

    async def on_message_send_stream(
        self, params: Any, context: ServerCallContext
    ) -> AsyncGenerator[Any, None]:
        try:
            await self._admit_message(params, context)
            async for event in super().on_message_send_stream(params, context):
                yield event
        except A2AError:
            raise
        except Exception as exc:
            raise _internal(context, exc) from exc

    # ---- reading and steering tasks: the operator plane, scoped to the caller's tasks ----

    async def on_get_task(self, params: Any, context: ServerCallContext) -> Any:
        require_operator(context)
        return await super().on_get_task(params, context)

    async def on_list_tasks(self, params: Any, context: ServerCallContext) -> Any:
        require_operator(context)
        return await super().on_list_tasks(params, context)

    async def on_cancel_task(self, params: Any, context: ServerCallContext) -> Any:
        require_operator(context)
        return await super().on_cancel_task(params, context)

    async def on_subscribe_to_task(
        self, params: Any, context: ServerCallContext
    ) -> AsyncGenerator[Any, None]:
        require_operator(context)
        async for event in super().on_subscribe_to_task(params, context):
            yield event


def _intake_request(verdict: Classified) -> AssessmentRequest:
    """The assessment an intake message asks for; InvalidParamsError with a sentence if bad."""
    try:
        if isinstance(verdict, StartTask):
            return AssessmentRequest(task_ids=verdict.task_ids, purple_url=verdict.purple_url)
        assert isinstance(verdict, Assessment)
        return AssessmentRequest.from_agentbeats(verdict.participants, verdict.config)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "request"
        raise InvalidParamsError(message=f"bad task request: {where}: {first['msg']}") from exc
    except ValueError as exc:
        raise InvalidParamsError(message=f"bad task request: {exc}") from exc


class RefusalStatus:
    """ASGI middleware: a refusal decided by the gate leaves with its HTTP status and headers
    (the JSON-RPC error body is unchanged). The response's start is held back until its first
    body chunk, because a streamed call (0.3 ``message/stream``) is refused inside its stream."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        held: list[Message] = []

        async def send_with_status(message: Message) -> None:
            if message["type"] == "http.response.start":
                held.append(message)
                return
            if held:
                start = held.pop()
                if verdict := scope.get(_HTTP):
                    status, headers = verdict
                    extra = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
                    start = {
                        **start,
                        "status": status,
                        "headers": list(start.get("headers", [])) + extra,
                    }
                await send(start)
            await send(message)

        await self.app(scope, receive, send_with_status)


AGENT_PLANE_METHODS = {"message/send", "message/stream", "SendMessage", "SendStreamingMessage"}
"""The only JSON-RPC methods an anonymous caller may reach (purple's execute/submit); every other
one is the operator's."""


class OperatorFirst:
    """ASGI middleware on the JSON-RPC route: an operator-only method from a caller without the
    operator's credential is answered 401 at once, before the SDK checks the protocol version
    (which answered an anonymous ``GetTask`` without ``A2A-Version`` with a version error)."""

    def __init__(self, app: ASGIApp, auth: OperatorAuth, path: str = "/") -> None:
        self.app = app
        self.auth = auth
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != self.path:
            await self.app(scope, receive, send)
            return
        header = dict(scope.get("headers") or []).get(b"authorization", b"").decode("latin-1")
        if self.auth.caller(header or None).may_operate:
            await self.app(scope, receive, send)
            return
        body = await read_body(receive)
        try:
            doc = json.loads(body)
        except (ValueError, RecursionError):
            doc = None
        method = doc.get("method") if isinstance(doc, dict) else None
        if not isinstance(method, str) or method in AGENT_PLANE_METHODS:
            await self.app(scope, replaying(body, receive), send)
            return
        ident = doc.get("id") if isinstance(doc.get("id"), str | int) else None
        error = rpc_error(ident, -32600, UNAUTHENTICATED)  # Invalid Request, as the gate says
        await send_json(send, 401, error, [(b"www-authenticate", b"Bearer")])
