"""Who is calling: the operator (holder of the operator token), or an anonymous caller.

The operator plane (creating, listing, reading and cancelling tasks; the ground truth) needs the
operator token by default. When none is configured, the first start generates one and keeps it
in a file only its owner can read, so ``make demo``, the batch CLI and the compose stack find it
without an extra step. The agent plane (``execute``/``submit`` with a task's own token) is not
decided here: the orchestrator checks the task token.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from services.shared.logging import get_logger

log = get_logger("services.green.edge.auth")

ANONYMOUS = "anonymous"


@dataclass(frozen=True)
class Caller:
    """A request's credential, as far as green can tell."""

    name: str
    """``operator:<fingerprint>`` for the token holder, ``anonymous`` otherwise; also the owner
    of the A2A tasks the caller creates."""
    operator: bool
    """Holds the operator token: may see the ground truth."""
    may_operate: bool
    """May use the operator plane: the operator, or anyone when the plane is explicitly open."""
    key: str | None = None
    """The SHA-256 of the bearer credential a caller other than the operator sent (None: it sent
    none): what a run it opened belongs to (:mod:`services.green.api.routes.runs`)."""


class OperatorAuth:
    """Checks bearer credentials against the operator token."""

    def __init__(self, token: str, *, open_plane: bool = False) -> None:
        if not token:
            raise ValueError("the operator token must not be empty")
        self._token = token.encode()
        self.open_plane = open_plane
        self.fingerprint = hashlib.sha256(self._token).hexdigest()[:12]

    def caller(self, authorization: str | None) -> Caller:
        """From an ``Authorization`` header value (``Bearer <token>``), any text accepted."""
        given = (authorization or "").strip()
        scheme, _, value = given.partition(" ")
        ok = scheme.lower() == "bearer" and secrets.compare_digest(
            value.strip().encode("utf-8", "surrogateescape"), self._token
        )
        if ok:
            return Caller(f"operator:{self.fingerprint}", operator=True, may_operate=True)
        key = hashlib.sha256(value.strip().encode("utf-8", "surrogateescape")).hexdigest()
        return Caller(
            ANONYMOUS,
            operator=False,
            may_operate=self.open_plane,
            key=key if scheme.lower() == "bearer" and value.strip() else None,
        )

    def derive_key(self, purpose: str) -> bytes:
        """A secret key for ``purpose`` (e.g. signing the dashboard's session cookies), derived
        from the operator token: it lasts as long as the token, and a new token voids it."""
        return hmac.new(self._token, f"arena:{purpose}".encode(), hashlib.sha256).digest()


def load_operator_token(configured: str | None, token_file: Path) -> str:
    """The configured token, else the one kept in ``token_file``, else a new one written there
    (mode 0600). Says in the log where it is, never what it is."""
    if configured:
        return configured
    try:
        kept = token_file.read_text().strip()
    except FileNotFoundError:
        kept = ""
    if kept:
        log.info("auth.operator_token", source=str(token_file))
        return kept
    token = secrets.token_urlsafe(32)
    token_file.parent.mkdir(parents=True, exist_ok=True)
    draft = token_file.with_name(f".{token_file.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    try:  # a hard link appears whole and never replaces: two greens starting together agree
        os.link(draft, token_file)
    except FileExistsError:
        return load_operator_token(None, token_file)
    finally:
        draft.unlink()
    log.warning(
        "auth.operator_token_generated",
        path=str(token_file.resolve()),
        hint="send it as 'Authorization: Bearer <token>' (the arena CLI reads this file)",
    )
    return token
