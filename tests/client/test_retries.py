"""When the client sends a call again (baton_client/retries.py, transport.after_try): pure
decisions, no I/O."""

from __future__ import annotations

import httpx
import pytest

from baton_client.call import Call
from baton_client.errors import BatonError, OutcomeUnknown, Unavailable
from baton_client.retries import NO_RETRY, Failure, RetryPolicy, retry_delay
from baton_client.transport import Answered, SendAgain, after_try


def test_delays_grow_exponentially_up_to_the_cap() -> None:
    policy = RetryPolicy(attempts=8, initial=0.5, multiplier=2, max_delay=3, jitter=0.2)
    assert [policy.delay(n, spread=0.5) for n in range(1, 6)] == [0.5, 1.0, 2.0, 3.0, 3.0]


def test_jitter_spreads_a_delay_both_ways_within_its_fraction_and_never_past_the_cap() -> None:
    policy = RetryPolicy(initial=1, multiplier=2, max_delay=4, jitter=0.25)
    assert policy.delay(2, spread=0.0) == pytest.approx(1.5)
    assert policy.delay(2, spread=0.999999) == pytest.approx(2.5, abs=1e-5)
    assert policy.delay(5, spread=0.999999) == 4  # capped after the spread too


@pytest.mark.parametrize("failure", [Failure.UNAVAILABLE, Failure.ANSWER_LOST])
def test_a_503_or_a_lost_answer_is_retried_only_for_a_call_safe_to_repeat(failure) -> None:
    policy = RetryPolicy(attempts=3)
    assert retry_delay(policy, 1, failure, safe=True, spread=0.5) == policy.delay(1, 0.5)
    assert retry_delay(policy, 1, failure, safe=False, spread=0.5) is None


def test_a_connection_never_made_is_retried_for_any_call_the_request_never_left() -> None:
    assert retry_delay(RetryPolicy(attempts=3), 1, Failure.NOT_SENT, safe=False, spread=0.5) is not None


def test_the_attempts_are_counted_the_first_included() -> None:
    policy = RetryPolicy(attempts=3)
    assert retry_delay(policy, 2, Failure.UNAVAILABLE, safe=True, spread=0.5) is not None
    assert retry_delay(policy, 3, Failure.UNAVAILABLE, safe=True, spread=0.5) is None
    assert retry_delay(NO_RETRY, 1, Failure.NOT_SENT, safe=True, spread=0.5) is None


def test_a_policy_out_of_bounds_says_which_value_and_why() -> None:
    with pytest.raises(ValueError) as refused:
        RetryPolicy(attempts=0, multiplier=0.5, jitter=1.0)
    assert str(refused.value) == (
        "RetryPolicy: attempts is 0: at least 1; multiplier is 0.5: 1 or more; jitter is 1.0: from 0 to less than 1"
    )


def _call(safe: bool, ok: frozenset[int] = frozenset({200})) -> Call[str]:
    return Call("POST", "/api/v1/tasks", str, safe=safe, ok=ok)


def _answer(status: int, body: bytes = b'{"detail": "the store is unavailable"}') -> httpx.Response:
    return httpx.Response(status, content=body)


POLICY = RetryPolicy(attempts=3, jitter=0)


def test_after_a_try_an_answer_is_the_result_and_a_503_the_call_expects_too() -> None:
    assert after_try(_call(safe=False), POLICY, 1, 0.5, _answer(200, b"fine"), None) == Answered("fine")
    assert after_try(_call(False, frozenset({200, 503})), POLICY, 1, 0.5, _answer(503, b"busy"), None) == Answered("busy")


def test_after_a_try_a_503_is_sent_again_only_when_safe_and_attempts_are_left() -> None:
    assert after_try(_call(safe=True), POLICY, 1, 0.5, _answer(503), None) == SendAgain(Failure.UNAVAILABLE, 0.5)
    with pytest.raises(BatonError):
        after_try(_call(safe=False), POLICY, 1, 0.5, _answer(503), None)
    with pytest.raises(BatonError):
        after_try(_call(safe=True), POLICY, 3, 0.5, _answer(503), None)


def test_after_a_try_a_connection_never_made_is_sent_again_and_a_lost_answer_is_unknown() -> None:
    never_made = httpx.ConnectError("refused")
    assert after_try(_call(safe=False), POLICY, 2, 0.5, None, never_made) == SendAgain(Failure.NOT_SENT, 1.0)
    with pytest.raises(OutcomeUnknown):
        after_try(_call(safe=False), POLICY, 1, 0.5, None, httpx.ReadError("reset"))
    with pytest.raises(Unavailable, match="3 attempt"):
        after_try(_call(safe=False), POLICY, 3, 0.5, None, never_made)
