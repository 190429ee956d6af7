"""mask_secrets takes shortcuts (every log line passes through it): a key's verdict remembered,
numbers and URL-free strings kept without a look. It must answer exactly what the plain
recursive walk answers, for any shape of data."""

from __future__ import annotations

import enum
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from common.secrets import names
from common.secrets.documents import mask_secrets
from common.secrets.names import SECRET_KEY
from common.secrets.scrubber import MASK
from common.secrets.urls import mask_url_passwords


def walked(value: Any) -> Any:
    """The plain walk: every key searched, every value looked at."""
    if isinstance(value, dict):
        return {k: MASK if isinstance(k, str) and SECRET_KEY.search(k) else walked(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [walked(v) for v in value]
    if isinstance(value, str):
        return mask_url_passwords(value)
    return value


class Field(enum.StrEnum):
    TOKEN = "api_token"
    NAME = "name"


KEYS = st.one_of(
    st.sampled_from(["password", "Secret", "task_id", "api_key", "apikey", "step", "dsn", "credentials", "x"]),
    st.sampled_from(list(Field)),
    st.integers(-3, 3),
    st.text(max_size=12),
)
STRINGS = st.one_of(
    st.text(max_size=20),
    st.sampled_from(["mysql://root:hunter22@db:3306/x", "see https://u:p4ss@h/a and http://x", "://", "a://b:c@d"]),
)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), STRINGS)
DATA = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.tuples(inner, inner), st.dictionaries(KEYS, inner, max_size=5)),
    max_leaves=25,
)


@settings(max_examples=400, deadline=None)
@given(DATA)
def test_the_shortcuts_mask_what_the_plain_walk_masks(value):
    assert mask_secrets(value) == walked(value)
    assert mask_secrets({"event": "step finished", "data": value}) == walked({"event": "step finished", "data": value})


def test_a_key_named_like_a_secret_is_masked_every_time_it_is_seen():
    line = {"event": "x", "password": "hunter22", Field.TOKEN: "abc", "task_id": "t1", 3: {"token": 1}}
    for _ in range(3):
        assert mask_secrets(line) == {"event": "x", "password": MASK, Field.TOKEN: MASK, "task_id": "t1", 3: {"token": MASK}}


def test_the_remembered_verdicts_stay_bounded_and_keys_past_the_bound_are_still_searched(monkeypatch):
    kept = dict(names.KEY_VERDICTS)  # one dict, read in place by its users: emptied, then given back
    names.KEY_VERDICTS.clear()
    monkeypatch.setattr(names, "KEY_VERDICTS_MAX", 50)
    try:
        data = {f"key{n}": n for n in range(200)}
        assert mask_secrets(data) == data
        assert len(names.KEY_VERDICTS) == 50
        late = {"late_password": "p", "late_name": "n"}  # first seen once the memory is full
        assert mask_secrets(late) == {"late_password": MASK, "late_name": "n"}
        assert "late_password" not in names.KEY_VERDICTS
    finally:
        names.KEY_VERDICTS.clear()
        names.KEY_VERDICTS.update(kept)
