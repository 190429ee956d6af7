"""A store server the run was given but cannot use fails the run: a suite never passes unseen
because its server did not start (only a server not installed at all skips, outside CI)."""

from __future__ import annotations

import pytest

from tests.support.secantus import SecantusServer, secantus_server


def test_an_installed_server_that_cannot_start_fails_never_skips(monkeypatch: pytest.MonkeyPatch) -> None:
    def cannot_start(self: SecantusServer) -> None:
        raise RuntimeError("address already in use")

    monkeypatch.setattr(SecantusServer, "start", cannot_start)
    monkeypatch.delenv("CI", raising=False)  # on a laptop too
    with pytest.raises(BaseException) as outcome:  # noqa: PT011 - a skip must be told from a failure
        with secantus_server():
            pass
    assert outcome.type is pytest.fail.Exception, outcome.type
    assert "did not start" in str(outcome.value) and "address already in use" in str(outcome.value)
