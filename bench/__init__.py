"""Benchmarks: `make bench`. They print figures; they never fail the test suite."""
