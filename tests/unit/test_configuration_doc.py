"""docs/reference/configuration.md is generated from the settings classes (tools/settings_doc.py):
it must be what the generator writes now, so a setting added, renamed or re-described without
regenerating the page fails here. Run `python -m tools.settings_doc` to fix it."""

from __future__ import annotations

import re

import pytest
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from tools import settings_doc


def test_the_configuration_page_is_current() -> None:
    assert settings_doc.TARGET.read_text() == settings_doc.render(), (
        "docs/reference/configuration.md is stale: run `python -m tools.settings_doc`")
    assert settings_doc.main(["--check"]) == 0


def test_every_setting_of_every_class_has_its_row() -> None:
    page = settings_doc.TARGET.read_text()
    rows = set(re.findall(r"^\| `(BATON_[A-Z_]+)` \|", page, re.M))
    for _, cls in settings_doc.SECTIONS:
        prefix = cls.model_config["env_prefix"]
        for name in cls.model_fields:
            variable = prefix + name.upper()
            assert variable in rows, variable
    assert {"BATON_CONFIG_FILE", "BATON_API_URL", "BATON_API_TOKEN"} <= rows


def test_a_stale_page_is_caught(monkeypatch, tmp_path) -> None:
    stale = tmp_path / "configuration.md"
    stale.write_text(settings_doc.render().replace("`BATON_LEASE_SECONDS` | `30`", "`BATON_LEASE_SECONDS` | `20`"))
    monkeypatch.setattr(settings_doc, "TARGET", stale)
    assert settings_doc.main(["--check"]) == 1


def test_a_setting_without_a_description_stops_the_generator() -> None:
    class Undocumented(BaseSettings):
        model_config = SettingsConfigDict(env_prefix="BATON_X_")
        knob: int = Field(1)

    with pytest.raises(SystemExit, match="knob: no description"):
        list(settings_doc._fields(Undocumented, None))


def test_a_default_note_goes_to_the_default_column() -> None:
    assert settings_doc._row("BATON_A", 0.0, "how long (default: = lease / 3)") == "| `BATON_A` | `0` (= lease / 3) | how long |"
    assert settings_doc._row("BATON_B", None, "where (default: the admin URL's host)") == "| `BATON_B` | the admin URL's host | where |"
