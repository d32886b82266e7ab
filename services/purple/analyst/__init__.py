"""The stack-trace analyst: the offline default policy (no LLM). :mod:`.sanitizer` parses
reports, :mod:`.frames` keeps project frames, :mod:`.cfunc` finds enclosing functions,
:mod:`.policy` ranks and submits."""

from services.purple.analyst.policy import StackTraceAnalyst
from services.purple.analyst.sanitizer import Frame, SanitizerReport, Stack, parse_report

__all__ = ["Frame", "SanitizerReport", "Stack", "StackTraceAnalyst", "parse_report"]
