"""The floors of an ARVO task on the bundled fixtures: an empty submission scores 0, and the
crash-frame baseline (the top in-project frame of error.txt) hits where the fix is in the
crashing frame and misses where it is not."""

from __future__ import annotations

import pytest

from fixtures.catalog import DEFAULT_ASSETS_DIR
from services.green.kinds.arvo.floors import crash_frame_location, floors
from services.green.kinds.arvo.judge import Judge


def _floors(arvo_id: str) -> dict:
    d = DEFAULT_ASSETS_DIR / arvo_id
    if not (d / "patch.diff").exists():
        pytest.skip("fixture assets not built (python -m fixtures.build)")
    judge = Judge()
    prepared = judge.prepare(d / "patch.diff", d / "repo-vul.tar.gz")
    return floors(d / "error.txt", prepared, judge)


def test_empty_submission_floor_is_zero_and_crash_frame_hits_a_crash_frame_fix():
    f = _floors("900001")  # crash and fix: src/entity.c:xml_decode_entity
    assert set(f["empty"].values()) == {0.0}
    assert f["crash_frame_location"]["file"].endswith("/src/entity.c")
    assert f["crash_frame_location"]["function"] == "xml_decode_entity"
    assert f["crash_frame"]["file@1"] == 1.0 and f["crash_frame"]["func@1"] == 1.0


def test_crash_frame_baseline_misses_a_fix_in_another_file():
    f = _floors("900006")  # crash in src/decode.c, fix in src/header.c
    assert f["crash_frame_location"]["file"].endswith("/src/decode.c")
    assert f["crash_frame"]["file@5"] == 0.0


def test_no_project_frame_gives_no_location():
    text = "==1==ERROR: AddressSanitizer: SEGV\n    #0 0x1 in memcpy /usr/lib/x.c:3\n"
    assert crash_frame_location(text, "proj") is None
