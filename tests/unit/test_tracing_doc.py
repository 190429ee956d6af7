"""The examples of docs/guide/tracing.md, run: the variables of "Pointing it at a collector" turn
tracing on as the page says, and its command's own span is a child of the runtime's command span
when run as a module runs it (in a command process of its own, its spans carried back)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from common.tracing.config import tracing_config
from tests.support.doc_examples import REPO, blocks

PAGE = "docs/guide/tracing.md"


def _exports() -> dict[str, str]:
    code = blocks(PAGE, "Pointing it at a collector", "sh")[0]
    return dict(line.removeprefix("export ").split("=", 1) for line in code.splitlines() if line.strip())


def test_the_collector_example_turns_tracing_on_with_otlp() -> None:
    exports = _exports()
    assert tracing_config(exports).exporters == ("otlp",)
    assert tracing_config({**exports, "OTEL_TRACES_EXPORTER": "none"}) is None


def test_the_command_example_opens_a_span_under_its_command_span(tmp_path) -> None:
    (code,) = blocks(PAGE, "What spans exist", "python")
    (tmp_path / "storage_commands.py").write_text(code)
    script = textwrap.dedent("""
        import json
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from common.runtime.child import execute
        from common.tracing.setup import install_provider
        import storage_commands

        command_span = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        request = dict(task_id="t", task_type="resize", command="resize_disk", cursor=0, phase=0, attempt=1,
                       idempotency_key="t:0:normal", run_key="t", parameters={"volume": "v1", "size_gb": 20},
                       trace=command_span)
        answer = execute(storage_commands.registry, request, fault_injection=False)  # the command process
        provider = TracerProvider()  # then the module's side: where the carried spans are exported
        exported = InMemorySpanExporter()
        processor = SimpleSpanProcessor(exported)
        provider.add_span_processor(processor)
        install_provider(provider, processor)
        from common.tracing.adopt import adopt_spans
        adopt_spans(answer.pop("spans"))
        print(json.dumps({"answer": answer, "spans": [
            {"name": s.name, "trace": f"{s.context.trace_id:032x}", "parent": f"{s.parent.span_id:016x}",
             "attributes": dict(s.attributes)} for s in exported.get_finished_spans()]}))
    """)
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}:{REPO}"}
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=REPO, timeout=60)
    assert run.returncode == 0, run.stderr
    found = json.loads(run.stdout.strip().splitlines()[-1])
    assert found["answer"]["output"] == {"size_gb": 20}
    assert found["spans"] == [{"name": "call the storage API", "trace": "4bf92f3577b34da6a3ce929d0e0e4736",
                               "parent": "00f067aa0ba902b7", "attributes": {"storage.volume": "v1"}}]
