"""A callback token (docs/design/callbacks.md, "The token"): unguessable, only its hash kept,
its task found from it; never in a web server's request line as logged."""

from __future__ import annotations

import logging

from common.engine.commands import new_token, task_of, token_hash
from common.secrets.log_lines import masked_log_text


def test_a_token_names_its_task_and_is_new_each_time():
    tokens = {new_token("t" * 32) for _ in range(1000)}
    assert len(tokens) == 1000
    token = tokens.pop()
    assert task_of(token) == "t" * 32 and len(token.split(".")[1]) == 43
    assert token_hash(token) != token_hash(new_token("t" * 32)) and len(token_hash(token)) == 64
    for bad in ("", "t" * 32, f"{'t' * 32}.short", f"a/b.{'x' * 43}", f"{'t' * 32}.{'x' * 44}"):
        assert task_of(bad) is None, bad


def test_an_access_log_line_never_holds_the_token():
    token = new_token("0123abcd" * 4)
    line = f'127.0.0.1:5000 - "POST /api/v1/callbacks/{token} HTTP/1.1" 200'
    assert masked_log_text(line) == '127.0.0.1:5000 - "POST /api/v1/callbacks/*** HTTP/1.1" 200'
    record = logging.getLogRecordFactory()("uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
                                           ("127.0.0.1:5000", "POST", f"/api/v1/callbacks/{token}", "1.1", 200), None)
    assert token not in masked_log_text(record.getMessage())
