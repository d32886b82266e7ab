"""Every setting is documented: .env.example is generated from the settings classes, and the
docs name only settings that exist."""

import re
import subprocess
import sys

from scripts.gen_env_example import env_name
from services.green.config import DeveloperChecks, GreenSettings
from services.purple.config import PurpleSettings
from services.shared.telemetry import TracingSettings
from tests.support.servers import REPO

SETTING = re.compile(r"\b((?:GREEN|PURPLE)_[A-Z0-9_]*[A-Z0-9])\b")


def test_env_example_is_current():
    out = subprocess.run(
        [sys.executable, "scripts/gen_env_example.py", "--check"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr


def test_every_setting_has_a_docstring():
    for cls in (GreenSettings, PurpleSettings, TracingSettings, DeveloperChecks):
        missing = [
            name for name, f in cls.model_fields.items() if not (f.description or "").strip()
        ]
        assert not missing, f"{cls.__name__}: document {missing}"


def test_issue_named_green_settings_exist():
    for name in (
        "asset_source",
        "image_template",
        "database_url",
        "purple_url",
        "public_url",
        "max_concurrent_tasks",
        "task_timeout_s",
        "idle_timeout_s",
        "command_timeout_s",
        "max_steps",
        "log_dir",
    ):
        assert name in GreenSettings.model_fields


def test_reachable_url_never_advertises_a_wildcard_address():
    assert GreenSettings(host="0.0.0.0", port=9009).reachable_url() == "http://127.0.0.1:9009"
    assert GreenSettings(public_url="http://green:9009/").reachable_url() == "http://green:9009"
    assert PurpleSettings(host="::", port=9019).reachable_url() == "http://127.0.0.1:9019"


def test_card_url_and_the_url_purple_uses_can_differ():
    s = GreenSettings(public_url="http://green:9009", card_url="http://localhost:9009")
    assert (s.reachable_url(), s.advertised_url()) == ("http://green:9009", "http://localhost:9009")
    only_card = GreenSettings(card_url="https://arena.example.org")
    assert only_card.reachable_url() == only_card.advertised_url() == "https://arena.example.org"


def test_the_docs_name_only_settings_that_exist():
    known = {
        env_name(cls, name, field)
        for cls in (GreenSettings, PurpleSettings, DeveloperChecks)
        for name, field in cls.model_fields.items()
    }
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    unknown = {
        f"{page.relative_to(REPO)}: {name}"
        for page in pages
        for name in SETTING.findall(page.read_text())
        if name not in known
    }
    assert not unknown, f"no such setting: {sorted(unknown)}"
