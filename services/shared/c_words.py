"""C and C++ words that name types and qualifiers, never a function or a variable.

Read by the judge (a function name is never one of these) and by the offline analyst's lexer
(a cast or a declaration starts with them).
"""

C_TYPE_WORDS = frozenset(
    {
        "void",
        "char",
        "short",
        "int",
        "long",
        "float",
        "double",
        "signed",
        "unsigned",
        "const",
        "volatile",
        "restrict",
        "__restrict",
        "__restrict__",
        "struct",
        "union",
        "enum",
        "bool",
        "_Bool",
        "register",
        "static",
        "inline",
        "auto",
        "typename",
        "class",
    }
)
