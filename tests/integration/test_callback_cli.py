"""`baton callback TOKEN`: exactly one of --succeed, --fail and --heartbeat. Two of them are a usage
error (exit 2) before anything is read or written, whatever their order: the command used to take
the last one given, so `--fail --succeed` reported a success. So is --no-retry beside --succeed."""

from __future__ import annotations

import uuid

import pytest
from click.testing import CliRunner

from oss.cli import main


@pytest.mark.parametrize("flags", [("--succeed", "--fail"), ("--fail", "--succeed"), ("--heartbeat", "--fail"),
                                   ("--succeed", "--heartbeat", "--fail"), ("--succeed", "--no-retry")])
def test_two_outcomes_at_once_are_a_usage_error(tmp_path, flags: tuple[str, ...]) -> None:
    env = {"BATON_STORE_URL": f"sqlite:///{tmp_path / 'baton.db'}", "BATON_BROKER_URL": f"memory://cli-{uuid.uuid4().hex}"}
    result = CliRunner().invoke(main, ["callback", "some-task.some-secret", *flags], env=env)
    assert result.exit_code == 2, result.output
    assert flags[-1] in result.output and "taken" not in result.output
    assert not (tmp_path / "baton.db").exists()  # refused before the store was opened
