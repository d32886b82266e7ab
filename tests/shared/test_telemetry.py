"""services/shared/telemetry: off (and the SDK never loaded) unless an endpoint is set; when on,
spans reach a real OTLP/HTTP receiver, a caller's traceparent is followed only when it is one."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from services.shared import telemetry
from services.shared.telemetry import OFF, Tracing, TracingSettings
from tests.support.otlp_receiver import OtlpReceiver
from tests.support.servers import REPO

OFF_CHECK = """
import sys
from services.green.app import create_app as green
from services.purple.app import create_app as purple
from services.shared import telemetry
t = telemetry.Tracing("arena-green")
with t.task("t1", "arvo", "arvo:1") as span, telemetry.chat("m", base_url=None, messages=[]) as c:
    span.ended("completed", "submitted")
    c.usage(1, 2)
print(json.dumps({"enabled": t.enabled, "sdk": "opentelemetry.sdk" in sys.modules,
                  "headers": telemetry.traceparent(), "span": span is telemetry.OFF}))
"""


def _off_run(**env: str) -> dict:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    out = subprocess.run(
        [sys.executable, "-c", "import json\n" + OFF_CHECK],
        cwd=REPO,
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_off_by_default_and_the_sdk_is_never_imported():
    assert _off_run() == {"enabled": False, "sdk": False, "headers": {}, "span": True}


def test_sdk_disabled_wins_over_an_endpoint():
    got = _off_run(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9", OTEL_SDK_DISABLED="true")
    assert got == {"enabled": False, "sdk": False, "headers": {}, "span": True}


def test_endpoint_and_headers_as_the_otel_variables_say():
    base = TracingSettings(otel_exporter_otlp_endpoint="http://c:4318/")
    assert base.traces_endpoint() == "http://c:4318/v1/traces"
    own = TracingSettings(
        otel_exporter_otlp_endpoint="http://c:4318",
        otel_exporter_otlp_traces_endpoint="https://t.example/otlp/traces",
    )
    assert own.traces_endpoint() == "https://t.example/otlp/traces"
    keyed = TracingSettings(otel_exporter_otlp_headers="x-api-key=abc, team = red,broken")
    assert keyed.headers() == {"x-api-key": "abc", "team": "red"}


def _on(receiver: OtlpReceiver, **settings: object) -> Tracing:
    return Tracing(
        "arena-test", TracingSettings(otel_exporter_otlp_endpoint=receiver.url, **settings)
    )


def test_helpers_outside_a_traced_task_record_nothing():
    with OtlpReceiver() as receiver:
        tracing = _on(receiver)
        with telemetry.tool("run_bash_cmd", "call_1", "ls") as note:
            assert note is OFF  # no task span around it: nothing to belong to
        assert telemetry.traceparent() == {}
        tracing.shutdown()
        assert receiver.received() == []


def test_a_callers_traceparent_is_followed_and_a_malformed_one_starts_a_trace():
    parent_trace, parent_span = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
    good = {"traceparent": f"00-{parent_trace}-{parent_span}-01"}
    bad = {"traceparent": "00-zz-not-a-trace-01", "tracestate": "k=v"}
    with OtlpReceiver() as receiver:
        tracing = _on(receiver)
        with tracing.invoke_agent("react", "t-good", good, "m") as note:
            note.ended("submitted", "accepted")
            sent = telemetry.traceparent()
        with tracing.invoke_agent("react", "t-bad", bad, None):
            pass
        tracing.shutdown()
        spans = {s.attributes["gen_ai.conversation.id"]: s for s in receiver.received()}
    followed, fresh = spans["t-good"], spans["t-bad"]
    assert (followed.trace_id, followed.parent_span_id) == (parent_trace, parent_span)
    assert sent == {"traceparent": f"00-{parent_trace}-{followed.span_id}-01"}  # no baggage
    assert fresh.parent_span_id == "" and fresh.trace_id != parent_trace
    assert followed.service == "arena-test" and "gen_ai.request.model" not in fresh.attributes


def test_a_failing_call_says_its_error_type():
    with OtlpReceiver() as receiver:
        tracing = _on(receiver)
        try:
            with (
                tracing.task("t1", "arvo", "arvo:1"),
                telemetry.chat("m", base_url=None, messages=[]),
            ):
                raise TimeoutError("the model did not answer")
        except TimeoutError:
            pass
        tracing.shutdown()
        chat = next(s for s in receiver.received() if s.name == "chat m")
    assert chat.attributes["error.type"] == "TimeoutError" and chat.status_code == 2
    assert chat.attributes["server.address"] == "api.openai.com"
