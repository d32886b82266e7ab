"""The stack-trace analyst: the offline default policy (no LLM). The shared reader
(:mod:`services.shared.sanitizer`) reads the report and says which frames are the project's,
:mod:`.cfunc` finds enclosing functions, :mod:`.policy` ranks and submits."""

from services.purple.analyst.policy import StackTraceAnalyst
from services.shared.sanitizer import Frame, SanitizerReport, Stack, parse_report

__all__ = ["Frame", "SanitizerReport", "Stack", "StackTraceAnalyst", "parse_report"]
