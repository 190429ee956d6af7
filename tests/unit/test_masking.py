"""masked_task_view: declared secrets, secret-looking keys, and their values in free text."""

from __future__ import annotations

from common.secrets.scrubber import MASK
from common.secrets.task_views import masked_task, masked_task_view
from common.engine.document import StepMessage
from common.engine.states import ResultCode
from common.engine.core.entries import AttemptResult, Timing, claim, create_task, finish_attempt
from tests.support.builders import counter_ids, make_step

PASSWORD = "correct-horse-battery"


def secret_task():
    return create_task(
        task_type="t",
        steps=[make_step("a"), make_step("b")],
        parameters={"name": "db1", "admin_password": PASSWORD, "pin": 123456, "nested": {"dsn": "x"}},
        timing=Timing(100.0),
        secret_parameters=["pin", "admin_password"],
        ids=counter_ids(),
    )


def test_secret_names_are_recorded_sorted():
    assert secret_task().SecretParameters == ["admin_password", "pin"]


def test_declared_secrets_are_masked_in_parameters_and_in_the_outbox():
    view = masked_task_view(secret_task())
    assert view["Parameters"] == {"name": "db1", "admin_password": MASK, "pin": MASK, "nested": {"dsn": "x"}}
    assert "Parameters" not in view["Outbox"][0]["Body"]  # a step message only points at its unit
    assert PASSWORD not in str(view) and "123456" not in str(view)
    assert view["SecretParameters"] == ["admin_password", "pin"]  # the names are not secret


def test_a_step_message_written_before_round_2_has_its_copy_of_the_parameters_masked():
    task = secret_task()
    task.Outbox[0].Body["Parameters"] = dict(task.Parameters)  # what baton wrote before
    view = masked_task_view(task)
    assert view["Outbox"][0]["Body"]["Parameters"]["pin"] == MASK
    assert PASSWORD not in str(view) and "123456" not in str(view)


def test_secret_values_copied_into_messages_and_command_output_are_masked():
    task = secret_task()
    message = StepMessage.model_validate(task.Outbox[0].Body)
    task = claim(task, message, "w1", Timing(101))
    output = {"instance": {"password": "generated-pw-42", "url": "mysql://root:pw-in-url@h/db"}}
    failed = AttemptResult(ResultCode.FAILED, f"login as root/{PASSWORD} refused", output=output)
    task = finish_attempt(task, message.DispatchId, "w1", AttemptResult(ResultCode.OK, output=output), Timing(102))
    task.Steps[1].Message = failed.message + " (generated-pw-42)"
    view = masked_task_view(task)
    text = str(view)
    for secret in (PASSWORD, "generated-pw-42", "pw-in-url"):
        assert secret not in text
    assert view["Parameters"]["instance"]["password"] == MASK
    assert view["Steps"][1]["Message"] == f"login as root/{MASK} refused ({MASK})"


def test_a_masked_view_is_still_a_task():
    task = masked_task(secret_task())
    assert task.Parameters["admin_password"] == MASK and task.TaskId == secret_task().TaskId


def test_log_lines_inside_hidden_values_have_the_task_secrets_masked():
    from common.secrets.log_lines import mask_log_event as _mask_processor, hidden_values
    from common.secrets.values import secret_values

    event = {"event": "step finished", "error": f"login as root/{PASSWORD} refused", "n": [PASSWORD]}
    with hidden_values(secret_values(secret_task())):
        inside = _mask_processor(None, "warning", dict(event))
    outside = _mask_processor(None, "warning", dict(event))
    assert inside == {"event": "step finished", "error": "login as root/*** refused", "n": ["***"]}
    assert outside == event  # only where the values were declared hidden


KEY_SPELLINGS = {"api-key": "k-1-abcdef", "Api_Key": "k-2-abcdef", "PRIVATEKEY": "k-3-abcdef",
                 "private-key": "k-4-abcdef", "aws_access_key": "k-5-abcdef", "db_pwd": "k-6-abcdef"}


def test_keys_named_like_secrets_in_any_spelling_are_masked_with_their_values_wherever_quoted():
    task = create_task(task_type="t", steps=[make_step("a")], parameters={"name": "db1", "cfg": dict(KEY_SPELLINGS)},
                       timing=Timing(100.0), ids=counter_ids())
    task.Steps[0].Message = "sent " + ", ".join(KEY_SPELLINGS.values())
    view = masked_task_view(task)
    assert view["Parameters"] == {"name": "db1", "cfg": {key: MASK for key in KEY_SPELLINGS}}
    assert not any(value in str(view) for value in KEY_SPELLINGS.values())


def test_an_operator_s_reason_masks_a_value_after_a_name_in_any_spelling():
    from common.secrets.free_text import masked_free_text

    reason = "rotated: " + " ".join(f"{key}={value}" for key, value in KEY_SPELLINGS.items())
    masked = masked_free_text(reason)
    assert masked == "rotated: " + " ".join(f"{key}={MASK}" for key in KEY_SPELLINGS)
