"""httpx's one-shot calls (``web.get(url)`` for ``httpx.get(url)``) on the process's shared TLS
context (services/shared/http.py). Each one-shot call builds a client, and a client built without
that context parses certifi's bundle of root certificates: 42 ms of CPU, for a request to
127.0.0.1 that takes a millisecond. The tests poll services thousands of times a run."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import httpx

from services.shared.http import shared_tls

TIMEOUT_S = 30.0
"""A one-shot call's timeout unless the test gives one: httpx's 5 s is exceeded by a service
that answers at once on an idle machine and within seconds at load 25 (a purple's card, seen in
a loaded run); a test that means a bound says it."""


def _shared(call: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(call)
    def with_shared_context(*args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("timeout", TIMEOUT_S)
        return call(*args, **shared_tls(kwargs))

    return with_shared_context


get = _shared(httpx.get)
post = _shared(httpx.post)
put = _shared(httpx.put)
patch = _shared(httpx.patch)
delete = _shared(httpx.delete)
head = _shared(httpx.head)
options = _shared(httpx.options)
request = _shared(httpx.request)
stream = _shared(httpx.stream)
