"""The answer to a request that fails validation: 422 with, per error, where it is and what.

A body that is not JSON at all is located by line and column (``body, line 3 column 7``), not by
the character offset pydantic reports (``body.23``); every other error by its path in the
request (``body.task_ids.0``, ``query.limit``).
"""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse


def _where(error: dict[str, Any], body: Any) -> str:
    loc = error.get("loc") or ()
    if error.get("type") == "json_invalid" and isinstance(body, str) and len(loc) == 2:
        pos = int(loc[1])
        line = body.count("\n", 0, pos) + 1
        column = pos - (body.rfind("\n", 0, pos) + 1) + 1
        return f"body, line {line} column {column}"
    return ".".join(str(p) for p in loc)


def _message(error: dict[str, Any]) -> str:
    why = (error.get("ctx") or {}).get("error") if error.get("type") == "json_invalid" else None
    return f"{error['msg']}: {why}" if isinstance(why, str) else str(error["msg"])


async def invalid_request(_: Request, exc: RequestValidationError) -> JSONResponse:
    errors = [{"where": _where(e, exc.body), "message": _message(e)} for e in exc.errors()]
    return JSONResponse({"detail": "invalid request", "errors": errors}, status_code=422)
