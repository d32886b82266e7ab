"""Line bookkeeping of a diff hunk in old-file coordinates: removed lines, insertion anchors,
offsets against the real source, and mapping a later commit's lines back through earlier ones."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class _HunkLines:
    header: str
    source_start: int
    source_length: int
    target_start: int
    target_length: int
    removed: list[int] = field(default_factory=list)
    anchors: list[int] = field(default_factory=list)
    source_text: list[tuple[int, str]] = field(default_factory=list)
    """(old line, text) of context and removed lines, to check against the real source."""
    target_map: dict[int, int | None] = field(default_factory=dict)
    """new line → old line (None: the line is new) inside the hunk."""


def _hunk_lines(hunk, old_len: int | None) -> _HunkLines:
    out = _HunkLines(
        header=hunk.section_header.strip(),
        source_start=hunk.source_start,
        source_length=hunk.source_length,
        target_start=hunk.target_start,
        target_length=hunk.target_length,
    )
    # the next old line to be consumed: for an empty source range, '-N,0' means "after line N"
    cur_old = hunk.source_start if hunk.source_length > 0 else hunk.source_start + 1
    lines = [ln for ln in hunk if ln.line_type in ("+", "-", " ")]
    i = 0
    while i < len(lines):
        ln = lines[i]
        if ln.line_type == " ":
            out.source_text.append((cur_old, ln.value))
            if ln.target_line_no is not None:
                out.target_map[ln.target_line_no] = cur_old
            cur_old += 1
            i += 1
            continue
        # a change block: consecutive '-' and '+' lines
        j = i
        removed: list[int] = []
        added_targets: list[int] = []
        while j < len(lines) and lines[j].line_type != " ":
            if lines[j].line_type == "-":
                removed.append(cur_old)
                out.source_text.append((cur_old, lines[j].value))
                cur_old += 1
            elif lines[j].target_line_no is not None:
                added_targets.append(lines[j].target_line_no)
            j += 1
        for t in added_targets:
            out.target_map[t] = None
        if removed:
            out.removed.extend(removed)
        else:
            before, after = cur_old - 1, cur_old
            later_source = any(x.line_type != "+" for x in lines[j:])
            if before >= 1:
                out.anchors.append(before)
            if later_source or (old_len is not None and after <= old_len):
                out.anchors.append(after)
        i = j
    return out


def _line_text(value: str) -> str:
    return value.rstrip("\n").rstrip("\r").rstrip()


def _find_offset(
    hunk: _HunkLines, source_lines: list[str], where: dict[str, list[int]]
) -> int | None:
    """0 if the hunk's old lines match the source where the header says, else the nearest
    offset at which they all match (as ``patch`` would search), else None. ``where`` maps a
    line's text to its 0-based positions in the source."""
    if not hunk.source_text:
        return 0
    expected = [(n, _line_text(t)) for n, t in hunk.source_text]
    n_src = len(source_lines)

    def matches(delta: int) -> bool:
        for n, t in expected:
            k = n - 1 + delta
            if k < 0 or k >= n_src or source_lines[k] != t:
                return False
        return True

    if matches(0):
        return 0
    # anchor the search on the expected line that occurs least often in the source
    key_line, key_text = min(expected, key=lambda e: (len(where.get(e[1], ())), e[1] == ""))
    candidates = sorted((p - (key_line - 1) for p in where.get(key_text, ())), key=abs)
    for delta in candidates:
        if delta and matches(delta):
            return delta
    return None


def _map_back(line: int, earlier: list[_HunkLines]) -> int | None:
    """Map a line of the file *after* an earlier commit back to the file before it."""
    delta = 0
    for h in sorted(earlier, key=lambda h: h.target_start):
        t_first = h.target_start if h.target_length > 0 else h.target_start + 1
        if line < t_first:
            break
        if line < t_first + h.target_length:
            return h.target_map.get(line)
        delta = (h.source_start + h.source_length) - (h.target_start + h.target_length)
        if h.source_length == 0:
            delta += 1
        if h.target_length == 0:
            delta -= 1
    return line + delta
