"""Use-after-free: the other holders of the freed pointer.

When the crash dereferences a pointer kept in a struct member (``l->cache->len``), the object
was freed while that member still pointed at it. The places that store into the member
(``l->cache = found;``) are where the pointer is kept; the fix clears it when the object is
freed, or stops keeping it. One command greps the project's C files for those stores (never
a store of ``NULL``/``0``) and outlines each hit's function.
"""

from __future__ import annotations

import shlex

from services.purple.analyst.cfunc import enclosing_function, parse_numbered
from services.purple.analyst.clex import clean, tokenize
from services.purple.analyst.ranking import Candidate
from services.purple.analyst.resolve import MARK, Resolved

MAX_HOLDERS = 3


def dangling_member(line_text: str, column: int | None) -> str | None:
    """The member the dereferenced pointer was loaded from, from the access under the 1-based
    ``column``: ``l->cache->name_len`` at ``name_len`` gives ``cache``; ``p->x`` gives None
    (a plain variable, not a member)."""
    if not column:
        return None
    toks = tokenize(clean(line_text))
    at = next((i for i, t in enumerate(toks) if t.pos <= column - 1 < t.pos + len(t.text)), None)
    if at is None:
        return None
    if toks[at].text in ("->", ".") and at + 1 < len(toks):
        at += 1
    if at < 3 or toks[at].kind != "id" or toks[at - 1].text != "->":
        return None
    before = toks[at - 2]  # the last token of the dereferenced pointer expression
    if before.kind == "id" and toks[at - 3].text in ("->", "."):
        return before.text
    return None


def holders_command(member: str, roots: str) -> str:
    """Stores into ``member`` (``->member =`` / ``.member =``, not of NULL or 0) under
    ``roots``, each followed by its file's outline around it."""
    pattern = shlex.quote(rf"(->|\.)[[:space:]]*{member}[[:space:]]*=[^=]")
    null = shlex.quote(r"=[[:space:]]*(NULL|0|nullptr)[[:space:]]*;")
    prog = (
        'NR<=t && /^[A-Za-z_{}]/ {print NR": "substr($0,1,120)} '
        'NR>t && /^}/ {print NR": "substr($0,1,120); exit}'
    )
    return (
        f"grep -rnE --include='*.c' --include='*.cc' --include='*.cpp' {pattern} {roots} "
        f"2>/dev/null | grep -vE {null} | head -n {MAX_HOLDERS} | "
        "while IFS=: read -r f n rest; do "
        f'echo "{MARK} h $n $(wc -l <"$f") $f"; '
        f'awk -v t="$n" {shlex.quote(prog)} "$f" | tail -n 30; done'
    )


def parse_holders(output: str, member: str, src: str) -> list[Resolved]:
    out: list[Resolved] = []
    for block in output.split(MARK)[1:]:
        head, _, body = block.partition("\n")
        fields = head.strip().split(" ", 3)
        if len(fields) < 4 or fields[0] != "h" or not fields[1].isdigit():
            continue
        line, n_lines, path = int(fields[1]), int(fields[2] or 0), fields[3]
        fn = enclosing_function(parse_numbered(body), line)
        if fn.start is None or fn.name is None:
            continue  # a store outside any function (an initializer): not a holder
        rel = path[len(src) + 1 :] if path.startswith(src + "/") else path
        rel = rel.split("/", 1)[1] if "/" in rel else rel
        role = f"keeps the pointer that was left dangling (->{member}), not cleared on free"
        out.append(Resolved(Candidate(path, line, fn.name, role), rel, fn, path, n_lines + 1))
    return out
