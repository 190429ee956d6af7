"""A refused URL (flows.yaml notify, the store, any setting) is named in its error without its
user, password or query: start-up errors are printed and logged, and are no place for a secret."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from common.errors import ConfigError, FlowError
from common.flows.loader import parse_flows
from common.secrets.urls import redacted_url
from common.settings import load_settings
from common.store.factory import open_store
from common.store.side_stores import open_schedule_store
from oss.cli import main
from oss.settings import load_oss_settings

CANARY = "pw-canary-31"
NOTIFY = """version: 1
task_types:
  t:
    notify: {url: "%s"}
    steps:
      - {name: a, normal: {module: m, command: c}}
"""


@pytest.mark.parametrize("url", [f"ftp://user:{CANARY}@hooks.example/x", f"http//user:{CANARY}@hooks.example/x",
                                 f"ftp://hooks.example/x?token={CANARY}"])
def test_a_refused_notify_url_is_named_without_its_password(url):
    with pytest.raises(FlowError) as caught:
        parse_flows(NOTIFY % url, "flows.yaml")
    [problem] = caught.value.problems
    assert problem.startswith("flows.yaml:4: task_types.t.notify.url: must be an http:// or https:// URL (got ")
    assert CANARY not in problem


@pytest.mark.parametrize("url", [f"sqlite://user:{CANARY}@host/x.db", f"sqlite:x.db?password={CANARY}",
                                 f"postgres://user:{CANARY}@db/x", f"sqlite://u:{CANARY}@/x.db"])
def test_a_refused_store_url_is_named_without_its_password(url):
    for open_ in (open_store, open_schedule_store):
        with pytest.raises(ConfigError) as caught:
            open_(url)
        assert "store URL" in str(caught.value) and CANARY not in str(caught.value)


def test_the_cli_s_start_up_error_does_not_print_the_store_password():
    run = CliRunner().invoke(main, ["list"], env={"BATON_STORE_URL": f"postgres://admin:{CANARY}@db/baton"})
    assert run.exit_code != 0 and "store URL" in run.output and CANARY not in run.output


def test_a_refused_setting_is_echoed_without_a_url_password():
    with pytest.raises(ConfigError) as caught:
        load_settings(broker_heartbeat_seconds=f"amqp://guest:{CANARY}@rabbit/")
    assert "BATON_BROKER_HEARTBEAT_SECONDS" in str(caught.value) and CANARY not in str(caught.value)
    with pytest.raises(ConfigError) as caught:
        load_oss_settings(oss_port=f"amqp://guest:{CANARY}@rabbit/", api_tokens=f"a:{CANARY}-0123456789:nope")
    text = str(caught.value)
    assert "BATON_OSS_PORT" in text and "BATON_API_TOKENS" in text and CANARY not in text


def test_a_url_in_a_message_keeps_what_tells_which_it_is():
    assert redacted_url("amqp://guest:pw@rabbit:5672/vhost") == "amqp://***@rabbit:5672/vhost"
    assert redacted_url("amqp://u:p@ss/w?rd@rabbit/v?heartbeat=3") == "amqp://***@rabbit/v?***"
    assert redacted_url("https://hooks.example/x?token=t") == "https://hooks.example/x?***"
    assert redacted_url("sqlite:var/baton.db") == "sqlite:var/baton.db"
    # docs/guide/webhooks.md: how a task shows its type's webhook URL
    assert redacted_url("https://u:t@hooks.example.com/baton?token=x") == "https://***@hooks.example.com/baton?***"
