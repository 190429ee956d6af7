"""The invariant checker on hand-made documents: it passes clean runs and catches each broken rule.

Documents are made by driving the real pure transitions (so a clean history is exactly what
the engine writes), then tampered with to break one promise at a time.
"""

from __future__ import annotations

from common.engine.core.entries import Timing, claim, expire, release
from common.engine.document import Alarm
from common.engine.states import Phase, RunState, StepState, TaskStatus
from tests.chaos.hand_made import OK, attempt, drive, event, fail_at, message, new_task, ok, rules, sent, succeed, tick
from tests.chaos.invariants import check_invariants, check_task, expected_rollbacks
from tests.support.builders import counter_ids, only_run

# --- clean runs pass -------------------------------------------------------------------------------


def test_clean_success_rolled_back_and_rollback_failed_pass():
    tasks = [
        drive(new_task(), succeed),
        drive(new_task(), fail_at(0)),
        drive(new_task(), fail_at(2)),
        drive(new_task(), fail_at(2, rollback_fails_at=1)),
        drive(new_task(rollbacks=(True, False, True)), fail_at(2)),
        drive(new_task(rollbacks=(False, True, True)), fail_at(0)),
    ]
    statuses = [t.TaskStatus for t in tasks]
    assert statuses == [TaskStatus.SUCCESS, TaskStatus.ROLLED_BACK, TaskStatus.ROLLED_BACK,
                        TaskStatus.ROLLBACK_FAILED, TaskStatus.ROLLED_BACK, TaskStatus.ROLLED_BACK]
    alarms = [Alarm(AlarmId="a1", Kind="rollback_failed", Time=0, Message="", TaskId=tasks[3].TaskId)]
    report = check_invariants(tasks, accepted=[t.TaskId for t in tasks], alarms=alarms,
                              queues={"mod": 0, "mod.dead": 0})
    assert report.ok, report.summary()
    assert report.tasks == 6 and report.duplicate_commits == 0 and report.duplicate_executions == 0
    assert report.statuses == {"SUCCESS": 1, "ROLLED_BACK": 4, "ROLLBACK_FAILED": 1}
    assert expected_rollbacks(tasks[2]) == [2, 1, 0]
    assert expected_rollbacks(tasks[4]) == [2, 0]  # the step without rollback is passed over
    assert tasks[4].Steps[1].State is StepState.SKIPPED


def test_retries_count_as_executions_not_duplicates():
    task = drive(new_task(retry=2), lambda c, p, a: a >= 2)  # every step fails once, then works
    assert task.TaskStatus is TaskStatus.SUCCESS
    violations, figures = check_task(task)
    assert not violations
    assert figures.executions == 6 and figures.duplicate_executions == 0 and figures.lost_attempts == 0


def test_lease_lapse_is_a_duplicate_execution_not_a_duplicate_commit():
    task = sent(new_task(retry=1))
    m = message(task)
    task = ok(claim(task, m, "dead-worker", tick()))
    later = Timing(only_run(task).Deadline + 1, lease=5.0, redeliver_after=10.0)
    task = sent(ok(expire(task, later, ids=counter_ids("s"))))  # the sweeper: WORKER_LOST
    task = drive(task, succeed)
    violations, figures = check_task(task)
    assert not violations, violations
    assert (figures.executions, figures.duplicate_executions, figures.lost_attempts) == (4, 1, 1)
    assert figures.duplicate_commits == 0


def test_release_then_second_claim_of_the_same_attempt_is_allowed():
    task = sent(new_task())
    m = message(task)
    task = ok(claim(task, m, "w1", tick()))
    task = sent(ok(release(task, m.DispatchId, "w1", tick(), ids=counter_ids("r"))))
    task = drive(task, succeed)
    violations, figures = check_task(task)
    assert not violations, violations
    assert figures.duplicate_executions == 1 and figures.duplicate_commits == 0


def test_redispatch_of_a_never_claimed_run_is_clean():
    task = sent(new_task())
    later = Timing(only_run(task).Deadline + 1, lease=5.0, redeliver_after=10.0)
    task = sent(ok(expire(task, later)))
    assert task.History[-1].Event == "redispatched"
    assert not check_task(drive(task, succeed))[0]


# --- each broken promise is caught -----------------------------------------------------------------


def test_not_final_active_run_and_unsent_outbox_are_caught():
    running = attempt(sent(new_task()), OK)  # step 1 dispatched, step 0 done
    assert running.TaskStatus is TaskStatus.RUNNING
    assert "final" in rules(running)
    unsent = drive(new_task(), succeed)
    unsent.Outbox = new_task().Outbox  # a dispatch the broker never confirmed
    assert rules(unsent) == {"final"}


def test_missing_accepted_task_is_lost():
    task = drive(new_task(), succeed)
    report = check_invariants([task], accepted=[task.TaskId, "vanished"])
    assert [v.rule for v in report.violations] == ["lost"]


def test_outcome_committed_twice_is_caught_and_counted():
    task = drive(new_task(), succeed)
    again = next(e for e in task.History if e.Event == "step_succeeded" and e.Cursor == 1)
    task.History.insert(task.History.index(again) + 1, again.model_copy())
    violations, figures = check_task(task)
    assert "once" in {v.rule for v in violations}
    assert figures.duplicate_commits == 1


def test_rollback_committed_twice_is_caught():
    task = drive(new_task(), fail_at(1))
    again = next(e for e in task.History if e.Event == "rollback_succeeded" and e.Cursor == 0)
    task.History.insert(task.History.index(again), again.model_copy())
    assert "once" in rules(task)
    assert check_invariants([task]).duplicate_commits == 1


def test_attempt_failure_committed_twice_and_claim_twice_are_caught():
    task = drive(new_task(retry=1), lambda c, p, a: a >= 2)
    failed = next(e for e in task.History if e.Event == "attempt_failed")
    task.History.insert(task.History.index(failed), failed.model_copy())
    violations, _ = check_task(task)
    assert any("failure committed 2 times" in v.detail for v in violations)
    task2 = drive(new_task(), succeed)
    claimed = next(e for e in task2.History if e.Event == "claimed")
    task2.History.insert(task2.History.index(claimed), claimed.model_copy(update={"Actor": "w2"}))
    assert any("claimed 2 times" in v.detail for v in check_task(task2)[0])


def test_rollbacks_out_of_order_or_missing_are_caught():
    task = drive(new_task(), fail_at(2))
    rb = [e for e in task.History if e.Event == "rollback_succeeded"]
    i, j = task.History.index(rb[0]), task.History.index(rb[1])
    task.History[i], task.History[j] = task.History[j], task.History[i]  # 1 before 2
    assert "rollback" in rules(task)

    skipped_one = drive(new_task(), fail_at(2))
    skipped_one.History = [e for e in skipped_one.History if not (e.Event == "rollback_succeeded" and e.Cursor == 1)]
    assert "rollback" in rules(skipped_one)


def test_rollback_of_a_step_never_reached_is_caught():
    task = drive(new_task(), fail_at(0))
    final = next(i for i, e in enumerate(task.History) if e.Event == "task_rolled_back")
    task.History.insert(final, event("rollback_succeeded", 1, Phase.ROLLBACK, 1))
    assert "rollback" in rules(task)


def test_success_with_a_rollback_or_a_missing_step_is_caught():
    task = drive(new_task(), succeed)
    final = next(i for i, e in enumerate(task.History) if e.Event == "task_success")
    task.History.insert(final, event("rollback_succeeded", 2, Phase.ROLLBACK, 1))
    assert "rollback" in rules(task)
    gap = drive(new_task(), succeed)
    gap.History = [e for e in gap.History if not (e.Event == "step_succeeded" and e.Cursor == 1)]
    assert "rollback" in rules(gap)


def test_rollback_failed_must_end_the_rollbacks():
    task = drive(new_task(), fail_at(2, rollback_fails_at=1))
    assert not rules(task)
    final = next(i for i, e in enumerate(task.History) if e.Event == "task_rollback_failed")
    task.History.insert(final, event("rollback_succeeded", 0, Phase.ROLLBACK, 1))
    assert "rollback" in rules(task)


def test_state_going_backwards_is_caught():
    task = drive(new_task(), succeed)
    done = next(i for i, e in enumerate(task.History) if e.Event == "step_succeeded" and e.Cursor == 0)
    task.History.insert(done + 1, event("dispatched", 0, Phase.NORMAL, 2, actor="w9"))  # SUCCEEDED -> RUNNING
    assert "forward" in rules(task)


def test_event_after_the_final_one_is_caught():
    task = drive(new_task(), succeed)
    task.History.append(event("claimed", 2, Phase.NORMAL, 1))
    assert "forward" in rules(task)


def test_document_state_disagreeing_with_history_is_caught():
    task = drive(new_task(), succeed)
    task.Steps[1].State = StepState.RUNNING
    assert "forward" in rules(task)
    task2 = drive(new_task(), fail_at(1))
    task2.TaskStatus = TaskStatus.SUCCESS  # the document claims success after a rollback
    assert {"forward", "rollback"} <= rules(task2)


def test_claim_without_dispatch_is_caught():
    task = drive(new_task(), succeed)
    task.History = [e for e in task.History if not (e.Event == "dispatched" and e.Cursor == 2)]
    assert "forward" in rules(task)


def test_alarm_missing_or_extra_is_caught():
    failed = drive(new_task(), fail_at(1, rollback_fails_at=1))
    fine = drive(new_task(), succeed)
    assert [v.rule for v in check_invariants([failed, fine], alarms=[]).violations] == ["alarm"]
    twice = [Alarm(AlarmId=f"a{i}", Kind="rollback_failed", Time=0, Message="", TaskId=failed.TaskId) for i in range(2)]
    assert [v.rule for v in check_invariants([failed], alarms=twice).violations] == ["alarm"]
    dead = [Alarm(AlarmId="d", Kind="dead_letter", Time=0, Message="", TaskId=fine.TaskId),
            Alarm(AlarmId="a", Kind="rollback_failed", Time=0, Message="", TaskId=failed.TaskId)]
    assert check_invariants([failed, fine], alarms=dead).ok


def test_queues_must_be_drained_except_expected_dead_letters():
    report = check_invariants([], queues={"mysql": 0, "mysql.dead": 3, "resource": 2, "resource.dead": 0},
                              expected_dead_letters={"mysql.dead": 3})
    assert [v.detail for v in report.violations] == ["queue 'resource' holds 2 message(s), expected 0"]
    short = check_invariants([], queues={"mysql.dead": 2}, expected_dead_letters={"mysql.dead": 3})
    assert not short.ok
    missing = check_invariants([], queues={}, expected_dead_letters={"monitor.dead": 1})
    assert not missing.ok


def test_running_task_with_pending_run_is_reported_with_its_step():
    task = sent(new_task())
    violations, _ = check_task(task)
    assert any("run left: step 0 normal attempt 1 pending" in v.detail for v in violations)
    assert only_run(task).State is RunState.PENDING

