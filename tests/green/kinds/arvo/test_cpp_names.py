"""The C++ name corpus: small sources per construct, the function (name and span) green must
give for a line, and the spellings of it an agent or a sanitizer trace may write that must (and
must not) earn func credit."""

from __future__ import annotations

import textwrap

import pytest

from services.green.kinds.arvo.scoring import score
from services.green.kinds.arvo.scoring.functions import FunctionIndex, list_functions
from services.green.kinds.arvo.scoring.groundtruth import ground_truth_from_patch
from services.green.kinds.arvo.scoring.metrics import function_names, names_match
from services.green.kinds.arvo.scoring.names import split_names, submitted_name
from services.shared.loc import LocJson


def _src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


EXPORT_MACRO = _src(
    """
    namespace ns {
    class MY_API Widget {
     public:
      int size() const {
        return n_;
      }
      operator bool() const { return n_ != 0; }
      template <typename T> T as() const { return T(); }
      int n_;
    };
    }
    """
)

# (id, path, source, line, (qualified, start, end), must match, must not match)
CORPUS = [
    (
        "export-macro inline method",
        "include/widget.h",
        EXPORT_MACRO,
        5,
        ("ns::Widget::size", 4, 6),
        ["size", "Widget::size", "ns::Widget::size", "ns::Widget::size() const", "size()"],
        ["Widget", "ns::Widget", "Other::size", "ns::Widget::sizes", "resize"],
    ),
    (
        "export-macro conversion operator",
        "include/widget.h",
        EXPORT_MACRO,
        7,
        ("ns::Widget::operator bool", 7, 7),
        [
            "operator bool",
            "Widget::operator bool",
            "ns::Widget::operator bool() const",
            "operator bool()",
            "Widget::operator  bool",
        ],
        ["bool", "operator int", "Other::operator bool", "Widget::operator()"],
    ),
    (
        "export-macro member template",
        "include/widget.h",
        EXPORT_MACRO,
        8,
        ("ns::Widget::as", 8, 8),
        [
            "as",
            "Widget::as",
            "Widget::as<int>",
            "Widget::as<const char*>",
            "ns::Widget::as<char const*>() const",
            "ns::Widget::as<std::map<int, char *>>",
        ],
        ["Other::as<const char*>", ">", "ns::Widget::is"],
    ),
    (
        "macros, alignas and attributes before the class name",
        "lib/vec.hpp",
        _src(
            """
            namespace ns {
            struct MY_API alignas(8) Vec final : public Base {
              float x() const { return v[0]; }
            };
            class __attribute__((visibility("default"))) [[nodiscard]] DECL_EXPORT(1) Res {
              int get() {
                return 1;
              }
            };
            }
            """
        ),
        7,
        ("ns::Res::get", 6, 8),
        ["get", "Res::get", "ns::Res::get()"],
        ["Vec::get", "ns::Res"],
    ),
    (
        "call operator",
        "lib/less.cc",
        _src(
            """
            namespace ns {
            struct Less {
              bool operator()(int a, int b) const {
                return a < b;
              }
            };
            }
            """
        ),
        4,
        ("ns::Less::operator()", 3, 5),
        [
            "operator()",
            "Less::operator()",
            "ns::Less::operator()(int, int) const",
            "bool ns::Less::operator()(int a, int b) const",
            "operator ()",
        ],
        ["Other::operator()(int, int)", "operator", "Less::operator<", "Less"],
    ),
    (
        "operator template and operator new[] out of line",
        "lib/pool.cc",
        _src(
            """
            namespace ns {
            template <typename T>
            bool operator==(const Box<T>& a, const Box<T>& b) {
              return a.v == b.v;
            }
            void* Pool::operator new[](size_t n) {
              return alloc(n);
            }
            }
            """
        ),
        7,
        ("ns::Pool::operator new[]", 6, 8),
        ["operator new[]", "Pool::operator new []", "ns::Pool::operator new[](unsigned long)"],
        ["operator new", "new", "Pool::operator delete[]"],
    ),
    (
        "operator template",
        "lib/pool.cc",
        _src(
            """
            namespace ns {
            template <typename T>
            bool operator==(const Box<T>& a, const Box<T>& b) {
              return a.v == b.v;
            }
            }
            """
        ),
        3,
        ("ns::operator==", 2, 5),
        [
            "operator==",
            "ns::operator==<int>",
            "bool ns::operator==<int>(ns::Box<int> const&, ns::Box<int> const&)",
        ],
        ["operator!=", "operator="],
    ),
    (
        "explicit specialization",
        "lib/box.cc",
        _src(
            """
            template <>
            int Box<int>::get() const {
              return v;
            }
            """
        ),
        3,
        ("Box::get", 1, 4),
        ["Box<int>::get", "Box::get", "get", "Box<int>::get() const"],
        ["Crate<int>::get"],
    ),
    (
        "method in the body of a class template specialization, nested namespace",
        "lib/box.hpp",
        _src(
            """
            namespace a::b {
            template <>
            struct Box< std::pair<int, char> > {
              int get() const {
                return 1;
              }
            };
            }
            """
        ),
        5,
        ("a::b::Box::get", 4, 6),
        ["Box<std::pair<int, char>>::get", "a::b::Box::get", "b::Box::get() const"],
        ["c::Box::get", "a::Box::get"],
    ),
    (
        "member template of a class template, out of line",
        "lib/box.cc",
        _src(
            """
            template <typename T>
            template <typename U>
            U Box<T>::as() const {
              return U(v);
            }
            """
        ),
        4,
        ("Box::as", 1, 5),
        ["Box<T>::as<U>", "Box<long>::as<char const*>() const", "as"],
        ["Crate::as"],
    ),
    (
        "nested class",
        "lib/outer.cc",
        _src(
            """
            struct Outer {
              struct Inner {
                int depth() {
                  return 2;
                }
              };
            };
            """
        ),
        4,
        ("Outer::Inner::depth", 3, 5),
        ["Inner::depth", "Outer::Inner::depth", "depth"],
        ["Outer::depth", "Other::Inner::depth"],
    ),
    (
        "lambdas and local classes belong to the enclosing function",
        "lib/run.cc",
        _src(
            """
            namespace ns {
            void run(std::vector<int>& xs) {
              std::sort(xs.begin(), xs.end(), [](int a, int b) {
                return a > b;
              });
              struct Local {
                int f() { return 1; }
              };
            }
            }
            """
        ),
        4,
        ("ns::run", 2, 9),
        [
            "run",
            "ns::run(std::vector<int, std::allocator<int> >&)",
            "ns::run(std::vector<int>&)::$_0::operator()(int, int) const",
            "ns::run(std::vector<int>&)::Local::f()",
            "ns::(anonymous namespace)::run",
        ],
        ["operator()", "sort", "Local::f"],
    ),
    (
        'extern "C" block',
        "lib/entry.cc",
        _src(
            """
            extern "C" {
            int c_entry(const uint8_t* data, size_t size) {
              return 0;
            }
            }
            """
        ),
        3,
        ("c_entry", 2, 4),
        ["c_entry", 'extern "C" int c_entry(const uint8_t* data, size_t size)'],
        ["entry"],
    ),
    (
        "destructor",
        "lib/widget.cc",
        _src(
            """
            namespace ns {
            Widget::~Widget() {
              delete[] buf_;
            }
            }
            """
        ),
        3,
        ("ns::Widget::~Widget", 2, 4),
        ["~Widget", "Widget::~Widget", "ns::Widget::~Widget()"],
        ["Widget", "Widget::Widget", "Other::~Widget"],
    ),
    (
        "function inside a macro tree-sitter reports as an error",
        "lib/handlers.cc",
        _src(
            """
            BEGIN_NS(foo)
            int handle(int x) {
              return x + 1;
            }
            END_NS
            """
        ),
        3,
        ("handle", 2, 4),
        ["handle", "int handle(int x)"],
        ["BEGIN_NS", "foo"],
    ),
    (
        "function inside a macro call (tree-sitter recovers with a missing ')')",
        "lib/wrapped.cc",
        _src(
            """
            WRAP_FN(
            int inner(int a) {
              return a;
            }
            )
            """
        ),
        3,
        ("inner", 2, 4),
        ["inner", "int inner(int a)"],
        ["WRAP_FN"],
    ),
    (
        "function inside a macro call, C grammar (a macro type with a missing ')')",
        "lib/wrapped.c",
        _src(
            """
            WRAP_FN(
            int inner(int a) {
              return a;
            }
            )
            """
        ),
        3,
        ("inner", 2, 4),
        ["inner"],
        ["WRAP_FN"],
    ),
]


@pytest.mark.parametrize(
    ("path", "source", "line", "expected", "good", "bad"),
    [c[1:] for c in CORPUS],
    ids=[c[0] for c in CORPUS],
)
def test_cpp_corpus(path, source, line, expected, good, bad):
    fn = FunctionIndex(source, path).enclosing(line, line)
    assert fn is not None
    assert (fn.qualified, fn.start_line, fn.end_line) == expected
    for spelling in good:
        assert any(names_match(p, fn) for p in function_names(spelling)), spelling
    for spelling in bad:
        assert not any(names_match(p, fn) for p in function_names(spelling)), spelling


def test_export_macro_class_scores_through_the_judge():
    """Defect 1 end to end: the fix is in an inline method of an export-macro class."""
    patch = (
        "--- a/include/widget.h\n+++ b/include/widget.h\n"
        "@@ -4,3 +4,3 @@ class MY_API Widget {\n"
        "   int size() const {\n-    return n_;\n+    return n_ < 0 ? 0 : n_;\n   }\n"
    )
    gt = ground_truth_from_patch(patch, sources={"include/widget.h": EXPORT_MACRO})
    assert [f.qualified for f in gt.files[0].functions] == ["ns::Widget::size"]
    for spelling in ["size", "Widget::size", "ns::Widget::size", "ns::Widget::size() const"]:
        sub = LocJson.model_validate(
            {
                "locations": [
                    {
                        "file": "include/widget.h",
                        "function": spelling,
                        "line_start": 5,
                        "line_end": 5,
                    }
                ]
            }
        )
        assert score(sub, gt).metrics()["func@1"] == 1.0, spelling
    for wrong in ["ns::Widget", "Other::size", "ns::Widget::resize"]:
        sub = LocJson.model_validate(
            {
                "locations": [
                    {"file": "include/widget.h", "function": wrong, "line_start": 5, "line_end": 5}
                ]
            }
        )
        assert score(sub, gt).metrics()["func@1"] == 0.0, wrong


def test_export_macro_class_spans_every_method():
    names = [(f.qualified, f.start_line, f.end_line) for f in list_functions(EXPORT_MACRO, "w.hpp")]
    assert names == [
        ("ns::Widget::size", 4, 6),
        ("ns::Widget::operator bool", 7, 7),
        ("ns::Widget::as", 8, 8),
    ]


def test_lines_and_columns_survive_neutralising():
    """The macro is blanked with spaces: spans stay on the source's own lines."""
    src = "class\nMY_API\nWidget\n{\n  int f() {\n    return 1;\n  }\n};\n"
    assert [(f.qualified, f.start_line, f.end_line) for f in list_functions(src, "w.hpp")] == [
        ("Widget::f", 5, 7)
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Widget::as<const char*>", ("as", "Widget::as")),
        ("ns::Widget::as<char const*>() const", ("as", "ns::Widget::as")),
        ("Map<K, V>::as", ("as", "Map::as")),
        ("operator()", ("operator()", "operator()")),
        ("ns::Less::operator()(int, int) const", ("operator()", "ns::Less::operator()")),
        ("Widget::operator bool", ("operator bool", "Widget::operator bool")),
        ("operator bool() const", ("operator bool", "operator bool")),
        ("X::operator const char *() const", ("operator const char*", "X::operator const char*")),
        ("X::operator std::string", ("operator std::string", "X::operator std::string")),
        ("operator new[]", ("operator new[]", "operator new[]")),
        ("operator delete", ("operator delete", "operator delete")),
        ("operator<<", ("operator<<", "operator<<")),
        ("A::operator<=>(A const&) const", ("operator<=>", "A::operator<=>")),
        ("~Widget", ("~Widget", "~Widget")),
        ("int ns::Widget::size() const &&", ("size", "ns::Widget::size")),
        ("auto f() noexcept -> int", ("f", "f")),
        ("static void f(int) noexcept(true)", ("f", "f")),
        ("::top_level()", ("top_level", "top_level")),
        ("ns::(anonymous namespace)::helper(int)", ("helper", "ns::helper")),
        ("ns::run()::$_0::operator()() const", ("run", "ns::run")),
        ("std::vector<std::vector<int>>::push_back", ("push_back", "std::vector::push_back")),
        ("PHP_FUNCTION(strlen)", ("strlen", "PHP_FUNCTION(strlen)")),
        ("`foo`", ("foo", "foo")),
        ("", None),
    ],
)
def test_submitted_name(text, expected):
    assert submitted_name(text) == expected


@pytest.mark.parametrize(
    ("text", "pieces"),
    [
        ("alpha, gamma", ["alpha", "gamma"]),
        ("alpha,gamma", ["alpha", "gamma"]),
        ("alpha/gamma;delta|eps", ["alpha", "gamma", "delta", "eps"]),
        ("alpha or gamma", ["alpha", "gamma"]),
        ("alpha and gamma", ["alpha", "gamma"]),
        ("alpha / gamma", ["alpha", "gamma"]),
        ("Map<K, V>::as", ["Map<K, V>::as"]),
        ("f(int, int), g", ["f(int, int)", "g"]),
        ("operator,", ["operator,"]),
        ("operator/", ["operator/"]),
    ],
)
def test_split_names(text, pieces):
    assert split_names(text) == pieces


@pytest.mark.timeout(120)
@pytest.mark.parametrize("unit", ["a<", "f(", "a<b>::", "f()::", "operator ", "x, "])
def test_hostile_function_fields_are_read_in_linear_time(unit):
    """The field is the agent's: nested '<' or '(' once took quadratic (or worse) time."""
    huge = unit * 200_000
    function_names(huge)  # capped at MAX_NAME_CHARS
    submitted_name(unit * 20_000)
    split_names(unit * 20_000)


@pytest.mark.parametrize(
    ("pred", "gt", "matches"),
    [
        ("operators::get", "ns::operators::get", True),  # a scope that starts with 'operator'
        ("other::get", "ns::operators::get", False),
        ("X::operator std::string", "ns::X::operator std::string", True),
        ("Y::operator std::string", "ns::X::operator std::string", False),
        ("string", "ns::X::operator std::string", False),
    ],
)
def test_scopes_around_operator_names(pred, gt, matches):
    from services.green.kinds.arvo.scoring.groundtruth import GTFunction
    from services.green.kinds.arvo.scoring.names import split_name

    fn = GTFunction(name=split_name(gt)[0], qualified=gt)
    assert any(names_match(p, fn) for p in function_names(pred)) is matches


# ---- the token-level reader: where each qualified name starts, ends and how deep it is ----------


def _names(text: str) -> list[tuple[str, int, int, int]]:
    from services.green.kinds.arvo.scoring.cppnames import qualified_names, tokenize

    return [(q.qualified, q.first, q.last, q.depth) for q in qualified_names(tokenize(text))]


def test_qualified_names_count_parenthesis_depth() -> None:
    # f ( g ( h ) ): each name one level deeper; the token after "(" is a name of its own
    assert _names("f(g(h))") == [("f", 0, 0, 0), ("g", 2, 2, 1), ("h", 4, 4, 2)]
    # f ( ( a ) b ): closing one level leaves b one deep, not at the top
    assert _names("f((a) b)") == [("f", 0, 0, 0), ("a", 3, 3, 2), ("b", 5, 5, 1)]
    assert _names("f(a::b)") == [("f", 0, 0, 0), ("a::b", 2, 4, 1)]


def test_a_leading_scope_operator_belongs_to_its_name() -> None:
    # f ( :: ns :: g ): the name starts at the "::" (token 2) and keeps both components
    assert _names("f(::ns::g)") == [("f", 0, 0, 0), ("ns::g", 2, 5, 1)]


def test_an_operator_name_ends_its_qualified_name() -> None:
    # after operator() a "::" starts a new name (a local entity of the operator), not a component
    assert _names("Less::operator()::Local") == [
        ("Less::operator()", 0, 2, 0),
        ("Local", 3, 4, 0),
    ]
