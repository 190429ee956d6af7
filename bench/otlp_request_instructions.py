"""What one OTLP export request costs the exporter's thread, besides encoding its spans, in
instructions (valgrind's callgrind): the SDK's OTLP client (headers, retries, compression) and
the transport that sends the bytes and reads the answer.

baton's exporter (common/tracing/exporter.py), made from the OTEL_* variables as a module makes
it, sends the same request body of a given size to a receiver in another process, once and then
many times on its kept connection; the difference per request leaves out the imports and the
connection's start. A module sends a request per 512 steps at full speed and one every 5 s when
steps are rare: at a few steps a request, this is most of what a traced step costs its exporter.

    python -m bench.otlp_request_instructions [few many [body bytes]]   (default 20 120 65536)
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.support.otlp_receiver import OtlpReceiver

SENDER = """
import os
from common.tracing.exporter import OtlpExporter

exporter = OtlpExporter()
body = bytes(int(os.environ["BODY"]))
for _ in range(int(os.environ["REQUESTS"])):
    if not exporter._client.export(body).success:
        raise SystemExit("the receiver refused a request")
"""


def request_row(few: int = 20, many: int = 120, body: int = 65536) -> tuple[str, str, str]:
    receiver = OtlpReceiver(decode=False).start()
    totals = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            script = Path(tmp) / "sender.py"
            script.write_text(SENDER)
            for requests in (few, many):
                out = Path(tmp) / f"requests-{requests}.out"
                env = {**os.environ, "REQUESTS": str(requests), "BODY": str(body),
                       "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
                       "PYTHONPATH": os.environ.get("PYTHONPATH", str(Path(__file__).resolve().parents[1]))}  # fmt: skip
                subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable,
                                str(script)], env=env, check=True, capture_output=True)  # fmt: skip
                match = re.search(r"^summary: (\d+)", out.read_text(), re.MULTILINE)
                totals.append(int(match.group(1)) if match else 0)
    finally:
        receiver.stop()
    per_request = (totals[1] - totals[0]) / (many - few)
    return ("an export request's own cost, the exporter's thread", f"{per_request / 1e3:.0f} k",
            f"instructions a request of {body} bytes, its encoding apart ({few} and {many} requests)")


if __name__ == "__main__":
    if shutil.which("valgrind") is None:
        sys.exit("needs valgrind (callgrind)")
    few, many = (int(n) for n in sys.argv[1:3]) if len(sys.argv) >= 3 else (20, 120)
    body = int(sys.argv[3]) if len(sys.argv) >= 4 else 65536
    name, value, note = request_row(few, many, body)
    print(f"  {name:<54}  {value:>8}  {note}")
