"""GREEN_INSTANCE_NAME: unique by default (host and random suffix, new per start), kept when set."""

from __future__ import annotations

import re
import socket

import pytest

from services.green.config import GreenSettings


def test_default_instance_names_are_unique_per_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GREEN_INSTANCE_NAME", raising=False)
    names = {GreenSettings(_env_file=None).instance_name for _ in range(20)}
    assert len(names) == 20
    pattern = re.compile(rf"{re.escape(socket.gethostname())}-[0-9a-f]{{6}}")
    assert all(pattern.fullmatch(n) for n in names), names


def test_a_set_instance_name_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GREEN_INSTANCE_NAME", "green-eu-1")
    assert GreenSettings(_env_file=None).instance_name == "green-eu-1"


def test_the_lease_is_bounded() -> None:
    with pytest.raises(ValueError, match="less than or equal to 60"):
        GreenSettings(_env_file=None, lease_s=61)
