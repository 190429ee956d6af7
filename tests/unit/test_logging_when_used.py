"""A client command's logging is set up when first needed (common.logging.configure_logging_when_used):
until then structlog is not even imported; the first module that imports it, or the first record
of a standard library logger, gets the same lines as configure_logging gives: on stderr, in the
chosen format, at the chosen levels, masked. Each case runs in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys

SET_UP = (
    "import sys\n"
    "from common.logging import configure_logging_when_used\n"
    "configure_logging_when_used('json', 'error', libraries='critical')\n"
    "assert 'structlog' not in sys.modules\n"
)


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", SET_UP + code], capture_output=True, text=True, timeout=120,
                          check=True)  # fmt: skip


def _lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_a_module_importing_structlog_logs_as_configured_on_stderr() -> None:
    done = _run(
        "import structlog\n"
        "log = structlog.get_logger('x')\n"
        "log.info('not at error level')\n"
        "log.error('broken', url='amqp://u:hunter2@h/', password='hunter2')\n"
    )
    assert done.stdout == ""
    [line] = _lines(done.stderr)
    assert line["event"] == "broken" and line["level"] == "error" and "timestamp" in line
    assert "hunter2" not in done.stderr and line["password"] == "***"


def test_a_standard_library_record_loads_the_set_up_and_is_written_once() -> None:
    done = _run(
        "import logging\n"
        "logging.getLogger('pika').error('a library line below its level')\n"
        "assert 'structlog' not in sys.modules\n"
        "logging.getLogger('baton.x').error('cannot reach amqp://u:hunter2@h/')\n"
        "assert 'structlog' in sys.modules\n"
        "logging.getLogger('baton.x').error('second')\n"
    )
    assert done.stdout == ""
    lines = _lines(done.stderr)
    assert [line["event"] for line in lines] == ["cannot reach amqp://u:***@h/", "second"]
    assert all(line["logger"] == "baton.x" and line["level"] == "error" for line in lines)


def test_nothing_logged_nothing_loaded() -> None:
    done = _run("import logging\nlogging.getLogger('x').warning('below error')\nprint('structlog' in sys.modules)")
    assert done.stdout.strip() == "False" and done.stderr == ""


def test_a_look_for_structlog_that_loads_nothing_leaves_the_set_up_waiting() -> None:
    done = _run(
        "import importlib.util\n"
        "assert importlib.util.find_spec('structlog') is not None\n"
        "import structlog\n"
        "structlog.get_logger('x').error('after a look')\n"
    )
    assert done.stdout == ""
    assert [line["event"] for line in _lines(done.stderr)] == ["after a look"]


def test_a_library_exception_is_one_event_with_its_error_and_where_not_a_traceback() -> None:
    """pika logs a lost connection with its traceback (logger.exception): in a JSON log that was
    a traceback of many lines inside one event."""
    done = subprocess.run([sys.executable, "-c", (
        "import logging\n"
        "from common.logging import configure_logging\n"
        "configure_logging('json', 'info')\n"
        "try:\n"
        "    raise ConnectionResetError('Transport indicated EOF amqp://u:hunter2@h/')\n"
        "except ConnectionResetError:\n"
        "    logging.getLogger('pika.adapters.utils.io_services_utils').exception('_AsyncBaseTransport._produce() failed')\n"
    )], capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
    [line] = _lines(done.stderr)
    assert line["event"] == "_AsyncBaseTransport._produce() failed" and line["level"] == "error"
    assert line["error"].startswith("ConnectionResetError: Transport indicated EOF") and "<string>:5" in line["where"]
    assert "exception" not in line and "Traceback" not in done.stderr and "hunter2" not in done.stderr
