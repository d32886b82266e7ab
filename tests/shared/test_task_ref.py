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
