"""A command's kind (docs/design/runtime.md) as the registry decides it from its declaration."""

from __future__ import annotations

import pytest

from common.runtime.registry import CommandRegistry
from common.settings import load_settings


def test_a_def_is_a_process_command_unless_it_asks_for_a_thread_and_an_async_def_is_async():
    registry = CommandRegistry("m")

    @registry.command()
    def plain(ctx):
        return {}

    @registry.command(kind="thread")
    def blocking(ctx):
        return {}

    @registry.command()
    async def waiting(ctx):
        return {}

    assert registry.kinds() == {"blocking": "thread", "plain": "process", "waiting": "async"}
    assert registry.kind("no_such_command") == "process"


@pytest.mark.parametrize(("declared", "is_async", "problem"), [
    ("async", False, "m.f: kind async needs an async def"),
    ("thread", True, "m.f: an async def runs as kind async, not 'thread'"),
    ("process", True, "m.f: an async def runs as kind async, not 'process'"),
    ("fibre", False, "m.f: kind must be one of process, thread, async, not 'fibre'"),
])
def test_a_kind_that_does_not_fit_the_function_is_refused_at_registration(declared, is_async, problem):
    registry = CommandRegistry("m")
    if is_async:
        async def f(ctx):
            return {}
    else:
        def f(ctx):
            return {}
    with pytest.raises(ValueError) as refused:
        registry.command(kind=declared)(f)
    assert str(refused.value) == problem


def test_process_slots_default_to_the_older_concurrency_setting(monkeypatch):
    monkeypatch.delenv("BATON_PROCESS_SLOTS", raising=False)
    monkeypatch.setenv("BATON_CONCURRENCY", "3")
    assert load_settings().slots("process") == 3
    monkeypatch.setenv("BATON_PROCESS_SLOTS", "5")
    loaded = load_settings()
    assert (loaded.slots("process"), loaded.slots("thread"), loaded.slots("async")) == (5, 16, 1000)



@pytest.mark.parametrize(("store_url", "threads"), [
    ("sqlite:var/baton.db", 2), ("SQLite:///abs/baton.db", 2),
    ("mongodb://db-1,db-2/baton?replicaSet=rs0", 8), ("mongomock://", 8),
])  # fmt: skip
def test_store_threads_default_by_the_store_and_a_setting_overrides_them(monkeypatch, store_url, threads):
    monkeypatch.delenv("BATON_STORE_THREADS", raising=False)
    monkeypatch.setenv("BATON_STORE_URL", store_url)
    assert load_settings().effective_store_threads == threads
    monkeypatch.setenv("BATON_STORE_THREADS", "5")
    assert load_settings().effective_store_threads == 5

def test_the_built_in_modules_run_each_command_on_the_kind_that_fits_it():
    """mysql: what changes an instance holds its lock across DDL and stays a killable process;
    the one read is a thread. monitor: one event-log insert, a thread (docs/design/runtime.md)."""
    from modules.monitor.commands import registry as monitor
    from modules.mysql.commands import registry as mysql

    assert {name for name, kind in mysql.kinds().items() if kind != "process"} == {"await_disconnect"}
    assert mysql.kind("await_disconnect") == "thread"
    assert monitor.kinds() == {"noop": "process", "noop_rollback": "process", "report_event": "thread"}
