"""masked_doc shows a task with no secret value and no "://" in any string without walking it.
What it answers must be what the walk answers: nothing left to scrub, for any shape of document."""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from common.secrets.documents import scrub_strings
from common.secrets.scrubber import MASK, Scrubber
from common.secrets.task_views import masked_doc

STRINGS = st.one_of(
    st.text(max_size=20),
    st.sampled_from(["mysql://root:hunter22@db:3306/x", "see https://u:p4ss@h/a and http://x", "://", "a://b:c@d"]),
)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), STRINGS)
DATA = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(STRINGS, inner, max_size=4)),
                    max_leaves=20)  # fmt: skip
DOCS = st.fixed_dictionaries({
    "TaskId": st.text(max_size=8),
    "Parameters": st.dictionaries(st.sampled_from(["name", "dsn", "size"]), DATA, max_size=3),
    "Message": STRINGS,
    "Steps": st.lists(st.fixed_dictionaries({"Name": STRINGS, "Output": DATA}), max_size=3),
    "History": st.lists(DATA, max_size=3),
})


@settings(max_examples=300, deadline=None)
@given(DOCS)
def test_a_document_without_secret_values_is_shown_as_the_walk_shows_it(doc):
    shown = masked_doc(copy.deepcopy(doc))
    assert shown == scrub_strings(shown, Scrubber([]))  # nothing the walk would still mask


def test_a_url_password_deep_in_a_document_without_secrets_is_masked():
    doc = {"Parameters": {"name": "a"}, "Steps": [{"Output": {"log": ["ok", {"seen": "mysql://root:hunter22@db/x"}]}}]}
    shown = masked_doc(doc)
    assert "hunter22" not in str(shown) and MASK in str(shown)


def test_a_document_with_nothing_to_mask_is_shown_unchanged():
    doc = {"Parameters": {"name": "a", "size": 3}, "SubmittedParameters": {"name": "a"}, "Message": "created",
           "Steps": [{"Output": {"n": 1.5}}]}
    assert masked_doc(copy.deepcopy(doc)) == doc
