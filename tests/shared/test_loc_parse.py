"""parse_loc_json never raises on what an agent writes: errors come back as sentences."""

from __future__ import annotations

import pytest

from services.shared.loc import parse_loc_json


@pytest.mark.parametrize(
    "raw",
    [
        "[" * 100_000,
        '{"locations": ' + "[" * 100_000 + "]" * 100_000 + "}",
        '{"reasoning": "x", "locations": [{"file": "a.c", "extra": '
        + "{"
        + '"k": {' * 50_000
        + "}" * 50_001
        + "}]}",
    ],
    ids=["unclosed", "closed", "inside-a-location"],
)
def test_deeply_nested_loc_json_is_an_error_not_a_crash(raw: str) -> None:
    loc, errors = parse_loc_json(raw)
    assert loc is None and len(errors) == 1 and "too deeply" in errors[0]
