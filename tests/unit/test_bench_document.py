"""bench.document runs (its figure is printed by `make bench`; no test asserts a time)."""

from bench.document import document_cpu
from bench.engine import FLOWS


def test_the_store_work_benchmark_runs_the_bench_task_to_its_end():
    result = document_cpu(FLOWS, tasks=5)
    assert result["cpu_ms_per_transition"] > 0 and result["kept_cpu_ms_per_transition"] > 0
    assert result["document_bytes"] > 1000  # three steps, their runs' history: a real document


def test_the_mark_sent_benchmark_marks_every_entry_both_ways():
    from bench.document import mark_sent_cpu

    result = mark_sent_cpu(FLOWS, tasks=5)  # each way asserts every mark it makes was written
    assert result["in_place"] > 0 and result["read_change_write"] > 0
