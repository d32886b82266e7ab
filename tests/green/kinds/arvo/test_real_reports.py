"""Green's readings of real ARVO reports as ARVO's database keeps them (colour codes, CRLF;
tests/shared/data/arvo_reports/README.md): the crash-frame floor's answer, the bug class,
the crash signature and where a fix lies on the report's stacks."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.green.kinds.arvo.assets.sources import LocalAssetSource
from services.green.kinds.arvo.crash import fix_position, parse_report, parse_signature
from services.green.kinds.arvo.floors import bug_class, crash_frame_location
from services.green.kinds.arvo.report import arvo_report

DATA = Path(__file__).parents[3] / "shared" / "data" / "arvo_reports"


@pytest.mark.parametrize(
    ("arvo_id", "project", "file", "function", "line"),
    [
        # the fuzz target's frame (tests/fuzzing/fuzzer_reader.c) is above it: not answered
        (421520684, "opensc", "/src/opensc/src/libopensc/apdu.c", "sc_single_transmit", 379),
        # the frame's path runs through tests/fuzzing/../../../
        (42511244, "opensc", "/src/opensc/src/tools/pkcs15-tool.c", "change_pin", 1837),
        (42496381, "openthread", "/src/openthread/src/core/meshcop/meshcop_tlvs.hpp", None, 779),
        (42482472, "libxml2", "/src/libxml2/error.c", "__xmlRaiseError", 589),
        (42495936, "wasm3", "/src/wasm3/source/m3_env.c", "Runtime_Release", 231),
    ],
)
def test_the_floor_answers_the_crash_site(arvo_id, project, file, function, line):
    loc = crash_frame_location((DATA / f"{arvo_id}.txt").read_bytes().decode(), project)
    assert loc is not None
    assert (loc["file"], loc["line_start"]) == (file, line)
    if function:
        assert loc["function"] == function


@pytest.mark.parametrize(
    ("arvo_id", "expected"),
    [
        (385773664, "object-size"),  # UBSan: the check, not the SUMMARY's undefined-behavior
        (42475028, "index-out-of-bounds"),
        (42482472, "use-of-uninitialized-value"),  # MSan WARNING: with no SUMMARY
        (42535924, "double-free"),
        (42495936, "deadly-signal"),
    ],
)
def test_bug_classes(arvo_id, expected):
    assert bug_class(DATA / f"{arvo_id}.txt") == expected


def test_the_signature_of_a_coloured_crlf_report_equals_the_plain_ones():
    raw = (DATA / "42490592.txt").read_bytes().decode()
    bare = raw.replace("\r\n", "\n")
    for escape in ("\x1b[1m", "\x1b[0m", "\x1b[31m", "\x1b[32m", "\x1b[34m", "\x1b[35m"):
        bare = bare.replace(escape, "")
    coloured, plain = parse_signature(raw, "openthread"), parse_signature(bare, "openthread")
    assert coloured == plain and coloured is not None
    assert coloured.sanitizer_class == "AddressSanitizer: stack-buffer-overflow"
    assert coloured.frame.file == "/src/openthread/src/core/coap/coap_header.cpp"


def test_fix_positions_on_the_free_and_allocation_stacks():
    report = parse_report((DATA / "42535924.txt").read_bytes())

    def at(function: str) -> str:
        files = [{"path": "src/x.c", "functions": [{"name": function}]}]
        return fix_position(report, {"files": files})

    assert at("libssh2_default_free") == "crash-frame"
    assert at("session_free") == "caller"
    assert at("diffie_hellman_sha_algo") == "free-stack"
    assert at("_libssh2_copy_string") == "allocation-stack"


def test_the_dashboards_report_is_plain_text(tmp_path: Path):
    """The task page shows error.txt as text: a terminal's colour codes and CRs would reach the
    page as control characters."""
    (tmp_path / "42535924").mkdir()
    raw = (DATA / "42535924.txt").read_bytes()
    (tmp_path / "42535924" / "error.txt").write_bytes(raw)
    report = arvo_report(LocalAssetSource(tmp_path), "42535924")
    assert "\x1b" not in report.text and "\r" not in report.text
    assert report.group == "double-free"
    assert report.text.count("\n") == raw.count(b"\r\n")
