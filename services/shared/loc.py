"""The submission format (``loc.json``): ranked code locations that name the root cause.

```json
{"reasoning": "why",
 "locations": [{"file": "magick/render.c", "function": "DrawImage",
                "line_start": 6357, "line_end": 6363, "description": "why here"}]}
```
"""

from __future__ import annotations

import json
import posixpath
import re

from pydantic import BaseModel, Field, ValidationError, model_validator

MAX_LOCATIONS = 50
"""A submission may list more, but it is refused: the judge only reads the top 5 anyway."""


class Location(BaseModel):
    file: str = Field(min_length=1, description="Path relative to the project root")
    function: str | None = Field(None, description="Enclosing function name")
    line_start: int = Field(ge=1, description="First line (1-based, inclusive)")
    line_end: int = Field(ge=1, description="Last line (1-based, inclusive)")
    description: str = ""

    @model_validator(mode="after")
    def _ordered(self) -> Location:
        if self.line_end < self.line_start:
            raise ValueError(f"line_end ({self.line_end}) is before line_start ({self.line_start})")
        return self


class LocJson(BaseModel):
    reasoning: str = ""
    locations: list[Location] = Field(min_length=1, max_length=MAX_LOCATIONS)


def parse_loc_json(raw: bytes | str) -> tuple[LocJson | None, list[str]]:
    """Parse and validate a submission. Returns the model, or None and human-readable errors."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            return None, [f"loc.json is not UTF-8: {exc}"]
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        return None, [
            f"loc.json is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ]
    except RecursionError:  # json nests arrays/objects by recursion: 100,000 '[' blow it
        return None, ["loc.json nests arrays or objects too deeply to be read"]
    try:
        return LocJson.model_validate(data), []
    except RecursionError:
        return None, ["loc.json nests arrays or objects too deeply to be validated"]
    except ValidationError as exc:
        errors = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err["loc"]) or "(top level)"
            errors.append(f"{where}: {err['msg']}")
        return None, errors


ROOT_PREFIXES = ("/workspace/src-vul/", "workspace/src-vul/", "src-vul/", "/src/")
"""Roots after which a path continues with the project folder (see :func:`normalize_path`)."""
_LINE_SUFFIX = re.compile(r"(?::\d+){1,2}$")


def normalize_path(path: str, project: str | None = None) -> str:
    """Map any of the path conventions that meet in a task to one repo-relative form.

    Frames say ``/src/<project>/lib/x.c``, the tarball extracts to ``src-vul/<project>/lib/x.c``,
    agents write ``./lib/x.c``, ``lib/x.c:42`` or ``/workspace/src-vul/<project>/lib/x.c``.
    All become ``lib/x.c``. Matching is then on the whole normalized path, never the basename.

    Rules: surrounding quotes/backticks and a trailing ``:line[:col]`` are dropped; backslashes
    become ``/``; after one of the roots ``/workspace/src-vul/``, ``src-vul/`` or ``/src/`` the
    project folder is dropped (``project`` when given; without it, the first folder);
    the rest is normalized (``./``, ``a//b``, ``a/./b``, ``a/x/../b``) and leading ``/`` removed.
    A *relative* path that starts with the project's name is left alone: ``libass/ass_render.c``
    is a real file of the libass repository (the scorer tries the stripped form as a second
    candidate, see ``services.green.kinds.arvo.scoring.metrics.path_candidates``).
    """
    p = path.strip().strip("`'\"").strip().replace("\\", "/")
    p = _LINE_SUFFIX.sub("", p)
    while p.startswith("./"):
        p = p[2:]
    for prefix in ROOT_PREFIXES:
        if p.startswith(prefix):
            rest = p[len(prefix) :].lstrip("/")
            if project:
                if rest == project:
                    rest = ""
                elif rest.startswith(project + "/"):
                    rest = rest[len(project) + 1 :]
                # else: another tree under /src (a dependency): keep it qualified
            else:
                rest = rest.split("/", 1)[1] if "/" in rest else rest
            p = rest
            break
    p = posixpath.normpath(p.lstrip("/")) if p else ""
    return "" if p == "." else p
