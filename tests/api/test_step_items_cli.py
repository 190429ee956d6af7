"""`baton get ID --items STEP`: a page of a for_each step's items from the command line, the same
for a step kept inline and one over records, masked, with the documented exit codes: 2 for a bad
request (one line naming the option), 3 for no such task, 5 with the store down. `baton get ID`
shows each fan-out step's items by state."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from oss.cli import main
from tests.api.test_step_items import run_fan_out


def baton(tmp_path, *argv: str, store_url: str | None = None):
    env = {"BATON_STORE_URL": store_url or f"sqlite:///{tmp_path / 'api.db'}",
           "BATON_FLOWS_PATH": str(tmp_path / "flows.yaml")}  # fmt: skip
    return CliRunner().invoke(main, list(argv), env=env)


@pytest.mark.parametrize("records", [True, False], ids=["records", "inline"])
def test_get_items_pages_the_step_in_text_and_json(api, tmp_path, monkeypatch, records):
    run_fan_out(api, "fe", records, monkeypatch, secret=True)
    first = baton(tmp_path, "get", "fe", "--items", "each", "--limit", "8")
    assert first.exit_code == 0, first.output
    lines = first.output.splitlines()
    assert lines[0] == "task fe  step 1 each: 20 items, 8 shown" and lines[-1] == "(more: --after 7)"
    assert [line.split("]")[0].strip() for line in lines[1:9]] == [f"[{i}" for i in range(8)]
    assert "host-" not in first.output and '"***"' in first.output  # secret values masked
    rest = json.loads(baton(tmp_path, "get", "fe", "--items", "1", "--after", "7", "--limit", "500", "--json").output)
    assert [i["Item"] for i in rest["Items"]] == list(range(8, 20)) and rest["NextAfter"] is None
    rolled = json.loads(baton(tmp_path, "get", "fe", "--items", "1", "--state", "rolled_back", "--json").output)
    assert rolled["Items"] and {i["State"] for i in rolled["Items"]} == {"rolled_back"}


@pytest.mark.parametrize("records", [True, False], ids=["records", "inline"])
def test_get_shows_each_fan_out_step_by_state(api, tmp_path, monkeypatch, records):
    run_fan_out(api, "fe", records, monkeypatch)
    counts = api.get("/api/v1/tasks/fe").json()["Steps"][1]["ItemCounts"]
    text = baton(tmp_path, "get", "fe").output
    # A finished task's items still waiting never ran: said so.
    said = {"waiting": "never started"}
    assert "items 20: " + ", ".join(f"{n} {said.get(state, state)}" for state, n in counts.items()) in text
    shown = json.loads(baton(tmp_path, "get", "fe", "--json").output)
    assert shown["Steps"][1]["ItemCounts"] == counts and shown["Steps"][0].get("ItemCounts") is None


@pytest.mark.parametrize("records", [True, False], ids=["records", "inline"])
def test_get_items_failed_and_never_started_in_a_finished_task(api, tmp_path, monkeypatch, records):
    run_fan_out(api, "fe", records, monkeypatch)
    failed = baton(tmp_path, "get", "fe", "--items", "each", "--failed")
    assert failed.exit_code == 0, failed.output
    assert [line.split()[0] for line in failed.output.splitlines()[1:]] == ["[5]"]
    waiting = baton(tmp_path, "get", "fe", "--items", "each", "--state", "waiting")
    lines = waiting.output.splitlines()[1:]
    assert lines and all("never started" in line for line in lines), waiting.output


@pytest.mark.parametrize(("argv", "said"), [
    (["--items", "0"], "--items: step 0 (a) is not a for_each step"),
    (["--items", "9"], "--items: step 9"),
    (["--items", "1", "--state", "bogus"], "--state: 'bogus' is not a state"),
    (["--state", "failed"], "give --items STEP too"),
    (["--failed"], "give --items STEP too"),
])
def test_a_bad_request_is_one_line_and_exit_2(api, tmp_path, monkeypatch, argv, said):
    run_fan_out(api, "fe", True, monkeypatch, steps=5)
    run = baton(tmp_path, "get", "fe", *argv)
    assert run.exit_code == 2 and said in run.output and len(run.output.strip().splitlines()) == 1, run.output


def test_no_such_task_exits_3_and_a_store_down_exits_5_in_one_line(api, tmp_path):
    assert baton(tmp_path, "get", "nothere", "--items", "1").exit_code == 3
    (tmp_path / "a-file").write_text("not a directory")
    down = baton(tmp_path, "get", "fe", "--items", "1", store_url=f"sqlite:///{tmp_path}/a-file/baton.db")
    assert down.exit_code == 5 and down.output.startswith("baton: ") and len(down.output.strip().splitlines()) == 1
