"""Function definitions in C/C++ source, by tree-sitter (names qualified with namespaces and classes)."""

from __future__ import annotations

import re
from functools import lru_cache

from services.green.kinds.arvo.scoring.names import (
    _MACRO_DEF,
    _clean_qualified,
    is_macro_form,
    name_from_declaration,
    split_name,
)
from services.green.kinds.arvo.scoring.spans import FunctionSpan, Language

_NAME_NODES = frozenset(
    {
        "identifier",
        "field_identifier",
        "qualified_identifier",
        "destructor_name",
        "operator_name",
        "template_function",
        "template_method",
        "operator_cast",
    }
)
_WRAPPER_DECLARATORS = frozenset(
    {
        "pointer_declarator",
        "reference_declarator",
        "parenthesized_declarator",
        "attributed_declarator",
        "array_declarator",
    }
)
_SCOPES = {"namespace_definition", "class_specifier", "struct_specifier", "union_specifier"}

_DESCEND = frozenset(
    {
        "translation_unit",
        "declaration_list",
        "field_declaration_list",
        "template_declaration",
        "preproc_if",
        "preproc_ifdef",
        "preproc_else",
        "preproc_elif",
        "preproc_elifdef",
        "linkage_specification",
        "namespace_definition",
        "class_specifier",
        "struct_specifier",
        "union_specifier",
        "ERROR",
        "declaration",
        "field_declaration",
        "type_definition",
        "export_declaration",
    }
)
"""Nodes whose children may hold function definitions."""


@lru_cache(maxsize=2)
def _ts_language(lang: Language):  # pragma: no cover - trivial
    from tree_sitter import Language as TSLanguage

    if lang == "c":
        import tree_sitter_c

        return TSLanguage(tree_sitter_c.language())
    import tree_sitter_cpp

    return TSLanguage(tree_sitter_cpp.language())


def _text(node, src: bytes) -> str:
    return src[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _macro_wrapped(fn):
    """``WRAP(\nint inner(int a) {...}\n)``: tree-sitter recovers with a *missing* ``)`` and
    reads a function ``WRAP`` whose last parameter is ``int inner(int a)`` (the C grammar: a
    function ``inner`` whose type is ``WRAP(int``). Returns the node where the real function
    starts and its declarator, else None."""
    d = fn.child_by_field_name("declarator")
    if d is None or d.type != "function_declarator":
        return None
    kind = fn.child_by_field_name("type")  # the C grammar: ``WRAP(int`` is a macro type
    if kind is not None and kind.type == "macro_type_specifier":
        if any(c.is_missing for c in kind.children) and kind.named_child_count > 1:
            return kind.named_children[-1], d
        return None
    params = d.child_by_field_name("parameters")
    if params is None or not any(c.is_missing for c in params.children):
        return None
    last = next((c for c in reversed(params.named_children)), None)
    inner = last.child_by_field_name("declarator") if last is not None else None
    if inner is None or inner.type != "function_declarator":
        return None
    return last, inner


def _declared_name(fn, src: bytes, d=None) -> tuple[str, str] | None:
    """Walk the declarator chain of a ``function_definition`` (or ``d``) down to the name."""
    d = d if d is not None else fn.child_by_field_name("declarator")
    fallback_ident = None
    for _ in range(64):
        if d is None:
            break
        if d.type == "function_declarator":
            inner = d.child_by_field_name("declarator")
            if inner is None:
                break
            if inner.type in _NAME_NODES:
                return split_name(_text(inner, src))
            d = inner
            continue
        if d.type in _WRAPPER_DECLARATORS:
            nxt = d.child_by_field_name("declarator")
            if nxt is None:
                nxt = next(
                    (
                        c
                        for c in d.named_children
                        if c.type not in ("type_qualifier", "ms_pointer_modifier")
                    ),
                    None,
                )
            if d.type == "parenthesized_declarator" and nxt is not None and nxt.type in _NAME_NODES:
                fallback_ident = nxt
            d = nxt
            continue
        if d.type in _NAME_NODES:
            fallback_ident = d
        break
    if fallback_ident is not None:
        # ``PHP_FUNCTION(strlen) {`` parses as a type ``PHP_FUNCTION`` and declarator ``(strlen)``
        name = _text(fallback_ident, src).strip()
        body = fn.child_by_field_name("body")
        header = src[fn.start_byte : body.start_byte if body else fn.end_byte].decode(
            "utf-8", "replace"
        )
        macro = _MACRO_DEF.match(header.strip())
        if macro and macro.group(2) == name:
            return name, f"{macro.group(1)}({name})"
        return split_name(name)
    return None


_CLASS_KEY = re.compile(rb"\b(?:class|struct|union)\s+")
_HEAD_ITEM = re.compile(
    rb"(?:\[\[.*?\]\]|[A-Za-z_]\w*\s*(?:\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\))?)\s*", re.DOTALL
)
_DECORATION_WORD = re.compile(rb"[A-Z_][A-Z0-9_]*|__\w+|\[\[.*\]\]", re.DOTALL)
_AFTER_CLASS_NAME = re.compile(rb"(?:\{|:(?!:)|final\b|<)")


def neutralise_class_heads(src: bytes) -> bytes:
    """Blank what stands between ``class``/``struct``/``union`` and the class name: export
    macros (``class JSON_API Value {``), ``alignas``, attributes. tree-sitter reads
    ``class MY_API Widget { ... }`` as a function ``Widget`` whose body is the class; with the
    macro blanked (spaces, so every line and column stays) it sees the class and its methods."""
    out = bytearray(src)
    changed = False
    for key in _CLASS_KEY.finditer(src):
        pos, items = key.end(), []
        for _ in range(8):
            item = _HEAD_ITEM.match(src, pos)
            if item is None or item.end() == pos:
                break
            pos = item.end()
            is_name = b"(" not in item.group() and not item.group().startswith(b"[[")
            if is_name and _AFTER_CLASS_NAME.match(src, pos):
                for deco in items:
                    for k in range(deco.start(), deco.end()):
                        if out[k] not in b"\r\n":
                            out[k] = 0x20
                    changed = True
                break
            if not (b"(" in item.group() or _DECORATION_WORD.fullmatch(item.group().strip())):
                break  # ``struct timeval tv {``: a lower-case word is no export macro
            items.append(item)
    return bytes(out) if changed else src


def _scope_prefix(node, src: bytes) -> list[str]:
    parts: list[str] = []
    p = node.parent
    while p is not None:
        if p.type in _SCOPES:
            n = p.child_by_field_name("name")
            if n is not None:
                parts.append(_clean_qualified(_text(n, src)))
        p = p.parent
    parts.reverse()
    return parts


def _tree_sitter_functions(src: bytes, lang: Language) -> list[FunctionSpan]:
    from tree_sitter import Parser

    if lang == "cpp":
        src = neutralise_class_heads(src)
    tree = Parser(_ts_language(lang)).parse(src)
    found: list[FunctionSpan] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "function_definition":
            wrapped = _macro_wrapped(node)
            named = _declared_name(node, src, wrapped[1] if wrapped else None)
            if named is None:
                body = node.child_by_field_name("body")
                header = src[node.start_byte : body.start_byte if body else node.end_byte]
                named = name_from_declaration(header.decode("utf-8", "replace"))
            if named is not None:
                name, qualified = named
                if lang == "cpp" and not is_macro_form(qualified):
                    scope = _scope_prefix(node, src)
                    if scope:
                        qualified = "::".join([*scope, qualified])
                start = wrapped[0] if wrapped else node
                while start.parent is not None and start.parent.type == "template_declaration":
                    start = start.parent  # ``template <...>`` lines (one per level) belong to it
                found.append(
                    FunctionSpan(
                        name=name,
                        qualified=qualified,
                        start_line=start.start_point.row + 1,
                        end_line=node.end_point.row + 1,
                        source="tree-sitter",
                    )
                )
            continue  # no function definitions inside a body worth reporting
        if node.type in _DESCEND:
            stack.extend(reversed(node.children))
    found.sort(key=lambda f: (f.start_line or 0, -(f.end_line or 0)))
    return found
