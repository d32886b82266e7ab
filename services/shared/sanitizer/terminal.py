"""A report as a terminal printed it, made plain: escape sequences and carriage returns gone.

Real reports are kept as a terminal received them: ARVO's database holds them with the
sanitizers' colours (``color=always``, or a pty) and CRLF line ends. Every ANSI sequence goes
(CSI such as colours and cursor moves, OSC such as titles and hyperlinks, the string commands
DCS/SOS/PM/APC, and two-byte escapes); ``\\r\\n`` and a lone ``\\r`` become ``\\n``.
"""

from __future__ import annotations

import re

_ESCAPE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours (SGR), cursor, erase
    r"|\x9b[0-?]*[ -/]*[@-~]"  # CSI as one C1 character
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC: title, hyperlink; BEL or ST ends it
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"  # DCS, SOS, PM, APC strings
    r"|\x1b[ -/]*[0-~]"  # any other escape (charset selection, keypad modes, ...)
)


def plain(data: bytes | str) -> str:
    """``data`` (bytes are read as UTF-8, bad bytes replaced) without terminal escapes and CR."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    if "\x1b" in text or "\x9b" in text:
        text = _ESCAPE.sub("", text)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text
