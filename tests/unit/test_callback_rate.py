"""The callback route's rate per client address, decided purely: a burst, then the rate; each
address its own bucket; the least recently seen forgotten past the bound."""

from oss.api.callback_rate import CallbackRate


def test_a_burst_then_the_rate_per_address():
    rate = CallbackRate(rate=2.0, burst=3.0)
    assert [rate.wait("a", 100.0) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert rate.wait("a", 100.0) == 0.5  # one token comes back in half a second
    assert rate.wait("b", 100.0) == 0.0  # another address: its own bucket
    assert rate.wait("a", 100.5) == 0.0 and rate.wait("a", 100.5) > 0


def test_a_refused_call_takes_nothing_and_addresses_are_bounded():
    rate = CallbackRate(rate=1.0, burst=1.0, max_addresses=2)
    assert rate.wait("a", 0.0) == 0.0 and rate.wait("a", 0.0) == 1.0 and rate.wait("a", 0.0) == 1.0
    rate.wait("b", 0.0)
    rate.wait("c", 0.0)  # "a" is forgotten: a full bucket again
    assert rate.wait("a", 0.0) == 0.0
