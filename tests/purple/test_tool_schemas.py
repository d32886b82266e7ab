"""The tool schemas and the prompt's tool list each toolset produces, pinned.

The files in data/tool_schemas/ are what the hand-written docstring parser produced before the
registry read docstrings with ``docstring_parser``: the model must see the same tools, byte for
byte. A deliberate change to a tool regenerates them (see below).
"""

import json
from pathlib import Path

import pytest

from services.purple.tools.toolsets import FixToolset, PocToolset, RcaToolset, SweToolset
from services.shared.protocol import TaskPaths

DATA = Path(__file__).parent / "data" / "tool_schemas"


def _registry(toolset):
    tools = toolset.make_tools(None, TaskPaths(workspace="/workspace"))
    return tools.registry()


@pytest.mark.parametrize(
    "toolset", [RcaToolset(), SweToolset(), PocToolset(), FixToolset()], ids=lambda t: t.name
)
def test_schemas_are_pinned(toolset) -> None:
    """To regenerate after a deliberate change: write ``json.dumps(registry.schemas(),
    indent=2)`` and ``registry.describe()`` to ``<name>.json`` / ``<name>.txt``."""
    registry = _registry(toolset)
    assert registry.schemas() == json.loads((DATA / f"{toolset.name}.json").read_text())
    assert registry.describe() + "\n" == (DATA / f"{toolset.name}.txt").read_text()


@pytest.mark.parametrize(
    "toolset", [RcaToolset(), SweToolset(), PocToolset(), FixToolset()], ids=lambda t: t.name
)
def test_every_argument_is_described(toolset) -> None:
    """A tool argument without text would reach the model bare: every one has a description."""
    for schema in _registry(toolset).schemas():
        fn = schema["function"]
        assert fn["description"] and "Args:" not in fn["description"], fn["name"]
        for name, prop in fn["parameters"]["properties"].items():
            assert prop.get("description"), f"{fn['name']}.{name}"
