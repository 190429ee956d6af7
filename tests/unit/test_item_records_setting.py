"""The setting `item_records` (BATON_ITEM_RECORDS): on by default, off keeps every for_each step's
items inline; each process's entry point hands it to the engine (fan_out.wire_records)."""

from __future__ import annotations

import pytest

from common.engine.kinds.for_each import records as fan_out
from common.errors import ConfigError
from common.settings import load_settings
from tests.support.builders import make_step


def _for_each():
    step = make_step("each")
    step.ForEach = "hosts"
    return step


@pytest.mark.parametrize("value", ["false", "0"])
def test_the_off_switch_keeps_items_inline(monkeypatch, value):
    monkeypatch.setattr(fan_out, "RECORDS_ENABLED", True)
    monkeypatch.setenv("BATON_ITEM_RECORDS", value)
    fan_out.wire_records(load_settings())
    assert fan_out.RECORDS_ENABLED is False and not fan_out.records_for(_for_each())


def test_records_are_the_default_and_an_unset_setting_leaves_the_engines_choice(monkeypatch):
    monkeypatch.delenv("BATON_ITEM_RECORDS", raising=False)
    settings = load_settings()
    assert settings.item_records is True
    monkeypatch.setattr(fan_out, "RECORDS_ENABLED", False)  # a process embedding the engine chose inline
    fan_out.wire_records(settings)
    assert fan_out.RECORDS_ENABLED is False
    monkeypatch.setenv("BATON_ITEM_RECORDS", "true")
    fan_out.wire_records(load_settings())
    assert fan_out.records_for(_for_each())


def test_a_bad_value_stops_the_start_naming_the_variable(monkeypatch):
    monkeypatch.setenv("BATON_ITEM_RECORDS", "sometimes")
    with pytest.raises(ConfigError, match="BATON_ITEM_RECORDS.*sometimes"):
        load_settings()
