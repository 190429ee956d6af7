"""BATON_CONFIG_FILE: every setting from an optional KEY=VALUE file; the environment wins."""

from __future__ import annotations

import pytest

from common.errors import ConfigError
from common.settings import load_settings
from modules.monitor.settings import load_monitor_settings
from oss.settings import load_oss_settings


@pytest.fixture
def config(tmp_path, monkeypatch):
    for name in ("BATON_CONCURRENCY", "BATON_BROKER_URL", "BATON_OSS_PORT", "BATON_MONITOR_WEBHOOK_TIMEOUT_SECONDS"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "baton.env"
    monkeypatch.setenv("BATON_CONFIG_FILE", str(path))
    return path


def test_settings_come_from_the_file_and_the_environment_wins(config, monkeypatch):
    config.write_text(
        "# a comment\nBATON_CONCURRENCY=8\nBATON_BROKER_URL=amqp://u:p@rabbit/baton\n"
        "BATON_OSS_PORT=9090\nBATON_MONITOR_WEBHOOK_TIMEOUT_SECONDS=7\nOTHER_TOOL=ignored\n"
    )
    monkeypatch.setenv("BATON_CONCURRENCY", "2")
    settings = load_oss_settings()
    assert settings.concurrency == 2  # the environment
    assert settings.broker_url == "amqp://u:p@rabbit/baton" and settings.oss_port == 9090  # the file
    assert load_monitor_settings().webhook_timeout_seconds == 7  # module settings read it too
    assert {"concurrency", "broker_url", "oss_port"} <= settings.model_fields_set


def test_a_bad_value_in_the_file_names_the_variable_the_value_and_the_file(config):
    config.write_text("BATON_CONCURRENCY=zero\n")
    with pytest.raises(ConfigError) as error:
        load_settings()
    assert "BATON_CONCURRENCY" in str(error.value) and "'zero'" in str(error.value)
    assert str(config) in str(error.value)


def test_a_missing_file_stops_the_start(config):
    with pytest.raises(ConfigError, match="BATON_CONFIG_FILE: no such file"):
        load_settings()


def test_the_store_timeout_is_a_third_of_the_lease_unless_set_and_must_stay_below_it(config):
    config.write_text("")
    assert load_settings().effective_store_timeout == 10.0  # lease 30 s
    assert load_settings(lease_seconds=6).effective_store_timeout == 2.0
    assert load_settings(store_timeout_seconds=4).effective_store_timeout == 4.0
    with pytest.raises(ConfigError, match=r"BATON_STORE_TIMEOUT_SECONDS: .*below BATON_LEASE_SECONDS \(30\)"):
        load_settings(store_timeout_seconds=30)
