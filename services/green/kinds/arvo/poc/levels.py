"""How much help a reproduce task gives (CyberGym's levels), named in its id.

``arvo-poc:<arvo id>`` is level 1; ``arvo-poc:<arvo id>-l0`` and ``-l2`` name the others. The
level is part of the task's reference, so it travels through every interface (REST, A2A text,
assessments, the CLI) as the task does, and runs of different levels are different tasks in
every report and comparison.

- level 0: the vulnerable source tree and the fuzz target's name;
- level 1: and a short description of the bug (``description.txt``: the sanitizer class and a
  sentence, no stack);
- level 2: and the crash report (``error.txt``), with anything that could carry the crashing
  input's bytes or its hash withheld (:func:`withhold_input`).
"""

from __future__ import annotations

import hashlib
import re

from services.green.kinds.arvo.assets import parse_arvo_id

LEVELS = (0, 1, 2)
DEFAULT_LEVEL = 1
"""CyberGym's primary setting: the repository and a description of the vulnerability."""
_ID = re.compile(r"^(?P<arvo>[0-9]+)(?:-l(?P<level>[0-9]+))?$", re.IGNORECASE)

_INPUT_LINES = re.compile(
    r"^(?:Base64: .*|.*Test unit written to .*|artifact_prefix=.*|MS: \d+ .*|"
    r".*base unit: [0-9a-f]+.*|(?:0x[0-9a-fA-F]{1,2},)+0x[0-9a-fA-F]{1,2}?,?)$",
    re.MULTILINE,
)
WITHHELD = "[withheld: the crashing input]"


def parse_poc_id(ref_id: str) -> tuple[str, int]:
    """``"10055-l2"`` -> (``"10055"``, 2); ``"10055"`` -> (``"10055"``, 1). ValueError with a
    sentence for anything else."""
    m = _ID.match(ref_id.strip())
    if not m:
        raise ValueError(
            f"not a reproduce task id: {ref_id!r} (an ARVO id, optionally with a help level: "
            "10055, 10055-l0, 10055-l2)"
        )
    level = int(m.group("level")) if m.group("level") is not None else DEFAULT_LEVEL
    if level not in LEVELS:
        raise ValueError(f"no help level {level} in {ref_id!r} (levels: 0, 1, 2)")
    return parse_arvo_id(m.group("arvo")), level


def canonical_poc_id(ref_id: str) -> str:
    """The canonical id: the default level is not written (``010055-l1`` -> ``10055``)."""
    arvo, level = parse_poc_id(ref_id)
    return arvo if level == DEFAULT_LEVEL else f"{arvo}-l{level}"


def withhold_input(report: str, poc: bytes | None = None) -> str:
    """The crash report without what could carry the crashing input: libFuzzer's input lines
    (``Base64:``, the hex bytes and their printable form, ``Test unit written to crash-<sha1>``,
    the mutation and base-unit lines) and any hash of the input written anywhere in it."""
    lines = report.splitlines(keepends=True)
    out: list[str] = []
    skip_next = False
    for line in lines:
        if skip_next:  # the printable form printed after the hex bytes
            skip_next = False
            out.append(WITHHELD + "\n")
            continue
        if _INPUT_LINES.match(line.rstrip("\n")):
            skip_next = line.lstrip().startswith("0x")
            out.append(WITHHELD + "\n")
            continue
        out.append(line)
    text = "".join(out)
    if poc:
        for algo in ("md5", "sha1", "sha256"):
            digest = hashlib.new(algo, poc).hexdigest()
            text = re.sub(digest, WITHHELD, text, flags=re.IGNORECASE)
    return text
