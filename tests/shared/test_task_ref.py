"""The one task-reference type and parser (services/shared/task_ref.py)."""

import pytest

from services.shared.task_ref import TaskRef, find_refs


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("arvo:10055", "arvo:10055"),
        ("ARVO : 010055", "arvo:10055"),
        (10055, "arvo:10055"),
        ("10055", "arvo:10055"),
        ("swebench:django__django-11099", "swebench:django__django-11099"),
        ("  swebench:a.b-1 ", "swebench:a.b-1"),
        ("arvo-poc:010055-l2", "arvo-poc:010055-l2"),  # its kind canonicalizes the id
        ("ARVO-FIX:10055", "arvo-fix:10055"),
    ],
)
def test_parse_canonical(value, expected):
    assert str(TaskRef.parse(value)) == expected


@pytest.mark.parametrize(
    "value",
    [
        "",
        "arvo:",
        "arvo:../etc",
        "arvo:-1",
        -5,
        True,
        None,
        1.5,
        "a b",
        "x:y:z",
        "arvo:a/b",
        "9kind:1",
        "-arvo:1",
        "arvo-:1",
        "arvo--poc:1",
    ],
)
def test_parse_rejects(value):
    with pytest.raises(ValueError, match="task reference"):
        TaskRef.parse(value)


def test_parse_is_idempotent_and_ordered():
    ref = TaskRef.parse("arvo:7")
    assert TaskRef.parse(ref) is ref
    assert TaskRef.parse(str(ref)) == ref
    assert sorted([TaskRef("swebench", "a"), TaskRef("arvo", "2")])[0].kind == "arvo"


def test_find_refs_in_free_text():
    text = "Task ID: arvo:10055. Also swebench:a__b-1, arvo:010055 again; http:8080 and xarvo:1 are not."
    assert [str(r) for r in find_refs(text, ["arvo", "swebench"])] == [
        "arvo:10055",
        "swebench:a__b-1",
    ]
    assert find_refs(text, []) == []


def test_find_refs_takes_kinds_with_a_hyphen_whole():
    text = "Task ID: arvo-poc:900001-l0, then arvo-fix:900002 and arvo:900003; x-arvo:4 is not."
    kinds = ["arvo", "arvo-poc", "arvo-fix"]
    assert [str(r) for r in find_refs(text, kinds)] == [
        "arvo-poc:900001-l0",
        "arvo-fix:900002",
        "arvo:900003",
    ]
