"""A function's span in a C/C++ file (:class:`FunctionSpan`) and the file's language from its name."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

FunctionSource = Literal["tree-sitter", "heuristic", "hunk-header"]
Language = Literal["c", "cpp"]

C_EXTENSIONS = frozenset({".c", ".h", ".inc", ".def", ".y", ".l"})
CPP_EXTENSIONS = frozenset(
    {
        ".cc",
        ".cpp",
        ".cxx",
        ".c++",
        ".cp",
        ".hpp",
        ".hh",
        ".hxx",
        ".h++",
        ".ipp",
        ".tcc",
        ".inl",
        ".ixx",
        ".cppm",
        ".txx",
        ".tpp",
        ".mm",
    }
)


class FunctionSpan(BaseModel):
    """A function definition: its unqualified and qualified name and its lines (1-based,
    inclusive; None when only a hunk header named it)."""

    model_config = ConfigDict(frozen=True)

    name: str
    """Unqualified: ``bar``, ``~Foo``, ``operator==``; for macro-made functions such as
    ``PHP_FUNCTION(strlen)`` the identifier inside: ``strlen``."""
    qualified: str
    """``ns::Foo::bar`` for C++ (templates arguments dropped), the macro form
    ``PHP_FUNCTION(strlen)`` for macro-made functions, else equal to ``name``."""
    start_line: int | None = None
    end_line: int | None = None
    source: FunctionSource = "tree-sitter"

    def contains(self, start: int, end: int) -> bool:
        if self.start_line is None or self.end_line is None:
            return False
        return self.start_line <= start and end <= self.end_line


def language_for(path: str) -> Language | None:
    """``"c"``, ``"cpp"`` or None (not a C/C++ file) from the file name."""
    dot = path.rfind(".")
    if dot < 0 or "/" in path[dot:]:
        return None
    ext = path[dot:].lower()
    if ext in C_EXTENSIONS:
        return "c"
    if ext in CPP_EXTENSIONS:
        return "cpp"
    return None
