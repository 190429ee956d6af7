"""POST /api/v1/bulk/{action}: a dry run that counts exactly, then the action on each task."""

from __future__ import annotations

from tests.api.support import READER, Api, auth


def bulk(api: Api, action: str, token: str | None = None, **body: object):
    body.setdefault("reason", "maintenance window")
    return api.client.post(f"/api/v1/bulk/{action}", json=body, headers=auth(token) if token else auth())


def test_dry_run_counts_exactly_and_changes_nothing_then_apply_does_it(api: Api) -> None:
    waiting = [api.create(labels={"wave": "1"})["task_id"] for _ in range(3)]
    running = api.create(labels={"wave": "1"})["task_id"]
    api.step(running, finish=False)  # claimed: a cancel fits it too (it rolls back after the step)
    rolled_back = api.rolled_back()  # no label: not selected
    dry = bulk(api, "cancel", labels={"wave": "1"})
    assert dry.status_code == 200, dry.text
    outcome = dry.json()
    assert outcome["dry_run"] is True and outcome["matched"] == 4 and outcome["refused"] == []
    assert sorted(outcome["applied"]) == sorted([*waiting, running])
    assert all(api.get(f"/api/v1/tasks/{t}").json()["TaskStatus"] == 1 for t in waiting)
    applied = bulk(api, "cancel", labels={"wave": "1"}, dry_run=False).json()
    assert applied["dry_run"] is False and sorted(applied["applied"]) == sorted([*waiting, running])
    for task_id in waiting:
        task = api.get(f"/api/v1/tasks/{task_id}").json()
        assert task["TaskStatus"] == 4
        assert any(e["Actor"] == "olga" and e["Message"] == "maintenance window" for e in task["History"])
    assert api.get(f"/api/v1/tasks/{rolled_back}").json()["TaskStatus"] == 4
    again = bulk(api, "cancel", labels={"wave": "1"}).json()  # they have ended now
    assert again["matched"] == 4 and len(again["applied"]) == 0 and len(again["refused"]) == 4


def test_retry_by_status_and_the_refusals_it_lists(api: Api) -> None:
    failed = [api.rolled_back() for _ in range(2)]
    stuck = api.rollback_failed()
    dry = bulk(api, "retry", status="ROLLED_BACK").json()
    assert sorted(dry["applied"]) == sorted(failed) and dry["matched"] == 2
    by_code = bulk(api, "retry-rollback", status="5", dry_run=False).json()
    assert by_code["applied"] == [stuck]
    assert api.get(f"/api/v1/tasks/{stuck}").json()["TaskStatus"] == 3


def test_limit_truncates_newest_first(api: Api) -> None:
    ids = [api.create(task_type="free_form")["task_id"] for _ in range(5)]
    outcome = bulk(api, "cancel", task_type="free_form", limit=2).json()
    assert outcome["matched"] == 2 and outcome["truncated"] is True
    assert outcome["applied"] == list(reversed(ids))[:2]


def test_refusals(api: Api) -> None:
    no_filter = bulk(api, "cancel")
    assert no_filter.status_code == 422 and "at least one filter" in no_filter.text
    assert bulk(api, "cancel", status="NOPE").status_code == 422
    assert bulk(api, "compensate", status="5").status_code == 422  # one task at a time only
    assert bulk(api, "cancel", status="1", reason="  ").status_code == 422
    assert bulk(api, "cancel", status="1", surprise=True).status_code == 422
    assert bulk(api, "cancel", READER, status="1").status_code == 403
