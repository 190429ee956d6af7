"""bench.masking runs (its figure is printed by `make bench`; no test asserts a time)."""

from bench.masking import masking_seconds


def test_the_masking_benchmark_measures_both_tasks():
    result = masking_seconds(values=50, repeats=1)
    assert result["values"] == 50
    assert result["secret_seconds"] > 0 and result["plain_seconds"] > 0
