"""The operator credential: who a bearer header makes you, and where the token is kept."""

from __future__ import annotations

import stat
import threading

import pytest

from services.green.edge.auth import Caller, OperatorAuth, load_operator_token
from services.green.edge.intake_limits import BugBusy, IntakeLimits, TooBusy
from services.shared.task_ref import TaskRef


@pytest.mark.parametrize(
    "header, operator",
    [
        ("Bearer s3cret-token", True),
        ("bearer s3cret-token", True),
        ("Bearer  s3cret-token ", True),
        ("Bearer s3cret-tokenX", False),
        ("Basic s3cret-token", False),
        ("s3cret-token", False),
        ("", False),
        (None, False),
        ("Bearer t\u00f6k\u00e9n", False),
        ("Bearer \udcff", False),
    ],
)
def test_only_the_operator_token_makes_an_operator(header, operator):
    auth = OperatorAuth("s3cret-token")
    who = auth.caller(header)
    assert who.operator is operator and who.may_operate is operator
    assert who.name.startswith("operator:") is operator
    assert "s3cret" not in who.name  # the owner name is a fingerprint, not the token


def test_an_open_plane_lets_anyone_operate_but_never_makes_them_the_operator():
    who = OperatorAuth("t", open_plane=True).caller(None)
    assert who.may_operate and not who.operator and who.name == "anonymous"


def test_the_token_is_generated_once_private_and_kept(tmp_path):
    path = tmp_path / "sub" / "operator-token"
    first = load_operator_token(None, path)
    assert len(first) >= 32 and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_operator_token(None, path) == first
    assert load_operator_token("configured", path) == "configured"
    assert list(path.parent.iterdir()) == [path], "no draft file is left behind"


def test_greens_starting_together_agree_on_one_token(tmp_path):
    path = tmp_path / "operator-token"
    tokens: list[str] = []
    threads = [
        threading.Thread(target=lambda: tokens.append(load_operator_token(None, path)))
        for _ in range(16)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(tokens)) == 1 and path.read_text().strip() == tokens[0]


async def test_intake_bounds_refuse_before_anything_is_created():
    unfinished = [0]
    limits = IntakeLimits(per_minute=3, max_queued=5, max_batch=4, unfinished=lambda: unfinished[0])
    op, other = Caller("op", True, True), Caller("other", True, True)
    refs = [TaskRef("arvo", str(i)) for i in range(5)]
    with pytest.raises(ValueError, match="at most 4"):
        await limits.admit(op, refs)
    with pytest.raises(ValueError, match="at most 4"):
        await limits.admit(op, refs[:2], trials=3)
    await limits.admit(op, refs[:4])
    unfinished[0] = 4
    with pytest.raises(TooBusy, match="GREEN_MAX_QUEUED_TASKS") as full:
        await limits.admit(op, refs[:2])
    assert full.value.retry_after >= 1
    await limits.admit(other, refs[:1])  # budgets are per caller
    await limits.admit(
        op, refs[:1]
    )  # the 3rd request of "op" this minute (a refused one counts too)
    with pytest.raises(TooBusy, match="per minute") as rate:
        await limits.admit(op, refs[:1])  # the 4th request of "op" this minute
    assert 1 <= rate.value.retry_after <= 60


async def _answer(bugs):
    return bugs


async def test_only_the_operator_may_start_a_task_of_a_bug_that_has_an_unfinished_one():
    busy = {"arvo:1"}
    limits = IntakeLimits(
        per_minute=100, max_queued=100, max_batch=10, unfinished=lambda: 0,
        busy=lambda bugs: _answer(bugs & busy),
    )  # fmt: skip
    anonymous = Caller("anonymous", operator=False, may_operate=True)  # the plane is open
    with pytest.raises(BugBusy, match="arvo:1 is unfinished"):
        await limits.admit(anonymous, [TaskRef("arvo", "2"), TaskRef("arvo", "1")])
    # nor a task of another kind on the same bug: a decoy fix would tell a patch's verdict
    for decoy in (TaskRef("arvo-fix", "1"), TaskRef("arvo-poc", "1-l2")):
        with pytest.raises(BugBusy, match="arvo:1 is unfinished"):
            await limits.admit(anonymous, [decoy])
    await limits.admit(anonymous, [TaskRef("arvo", "2"), TaskRef("swebench", "1")])
    await limits.admit(
        Caller("operator:abc", operator=True, may_operate=True), [TaskRef("arvo", "1")]
    )


async def test_requests_refused_for_a_busy_bug_still_spend_the_callers_rate():
    """The busy-bug check costs a database query: an anonymous caller asking for a busy bug
    again and again is rate-limited like any other, not answered 409 (and queried) forever."""
    asked = []

    async def busy(bugs):
        asked.append(bugs)
        return bugs

    limits = IntakeLimits(
        per_minute=3, max_queued=100, max_batch=10, unfinished=lambda: 0, busy=busy
    )
    anonymous = Caller("anonymous", operator=False, may_operate=True)
    for _ in range(3):
        with pytest.raises(BugBusy):
            await limits.admit(anonymous, [TaskRef("arvo", "1")])
    with pytest.raises(TooBusy, match="per minute"):
        await limits.admit(anonymous, [TaskRef("arvo", "1")])
    assert len(asked) == 3  # the fourth was refused before any query
