"""The one reader of sanitizer reports, for green and purple alike: :func:`parse_report` reads
ASan, MSan, UBSan, LeakSanitizer and libFuzzer reports, as terminals print them, into one
:class:`SanitizerReport`; :mod:`.frame_roles` says which frames are the project's.

Green reads ``error.txt`` and the runs of task images with it (the crash-frame floor, bug
classes, crash signatures, the dataset tools, the dashboard); purple's analyst reads the report
it is given. Both read the same facts from the same text.
"""

from services.shared.sanitizer.frames import Frame, Stack, StackKind, parse_frame
from services.shared.sanitizer.report import (
    SanitizerReport,
    SourceLocation,
    has_report,
    parse_report,
)
from services.shared.sanitizer.terminal import plain

__all__ = [
    "Frame",
    "SanitizerReport",
    "SourceLocation",
    "Stack",
    "StackKind",
    "has_report",
    "parse_frame",
    "parse_report",
    "plain",
]
