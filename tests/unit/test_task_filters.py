"""Page cursors: opaque to clients, exact on the way back, refused when tampered with."""

import pytest

from common.store.tasks.filters import decode_cursor, encode_cursor


@pytest.mark.parametrize("key", [(1_700_000_000.123456789, "abc"), (0.1 + 0.2, "é/ü"), (5.0, "")])
def test_a_cursor_gives_back_its_key_exactly(key):
    cursor = encode_cursor(key)
    assert decode_cursor(cursor) == key
    assert cursor.isascii() and "=" not in cursor and "/" not in cursor and "+" not in cursor


@pytest.mark.parametrize(
    "bad",
    ["", "x", "!!!!", "bm90IGpzb24", encode_cursor((1.0, "a"))[:-3],
     "WzEsMiwzXQ",  # [1,2,3]
     "WyJhIiwiYiJd",  # ["a","b"]
     "W3RydWUsImEiXQ",  # [true,"a"]
     "W251bGwsImEiXQ",  # [null,"a"]
     "WzEsMl0",  # [1,2]
    ],
)
def test_anything_else_is_refused(bad):
    with pytest.raises(ValueError):
        decode_cursor(bad)
