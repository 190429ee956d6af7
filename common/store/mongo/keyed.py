"""Keyed documents (common.store.keyed) on MongoDB, in the task store's database: one collection,
`Key` unique. A compare-and-set is a conditional replace on `Version`, read back when its answer
is lost (common.store.mongo.base)."""

from __future__ import annotations

from typing import Any, Generic

from pymongo import ASCENDING
from pymongo.errors import DuplicateKeyError

from common.store.keyed import KeyedDocument, check_next_version
from common.store.mongo import marks
from common.store.mongo.base import MongoAdapter
from common.store.mongo.errors import adapter_edge
from common.store.mongo.indexes import IndexSpec

_NO_ID = {"_id": False, marks.FIELD: False}
_edge = adapter_edge(None)  # errors named by the adapter's WHAT


class MongoKeyedDocuments(MongoAdapter, Generic[KeyedDocument]):
    """A subclass names its COLLECTION, DOCUMENT and NAMED; its COLLECTIONS (whose indexes it
    prepares) and WHAT (how its errors name it) follow from the collection."""

    COLLECTION = ""
    DOCUMENT: type[KeyedDocument]
    NAMED = ""  # how a wrong Version names the document ("lock")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.COLLECTION:
            cls.COLLECTIONS = [cls.COLLECTION]
            if "WHAT" not in vars(cls):  # named by its collection unless it says otherwise
                cls.WHAT = f"mongodb {cls.COLLECTION.replace('_', ' ')}"

    def __init__(self, url_or_client: str | Any, database: str = "baton", **options: Any):
        super().__init__(url_or_client, database, **options)
        self._documents = self.latest(self._db[self.COLLECTION])  # a write is decided on what is read here

    @_edge
    def get(self, key: str) -> KeyedDocument | None:
        doc = self._documents.find_one({"Key": key}, dict(_NO_ID))
        return self.DOCUMENT.model_validate(doc) if doc else None

    @_edge
    def documents(self, limit: int) -> list[KeyedDocument]:
        """By key; [] when limit <= 0."""
        if limit <= 0:
            return []
        docs = list(self._documents.find({}, dict(_NO_ID)).sort("Key", ASCENDING).limit(limit))
        return [self.DOCUMENT.model_validate(d) for d in docs]

    @_edge
    def compare_and_set(self, document: KeyedDocument, expected_version: int) -> bool:
        keyed: Any = document
        check_next_version(keyed, expected_version, self.NAMED)
        doc = document.model_dump(mode="json")
        if expected_version == 0:
            try:
                self.insert_versioned(self._documents, {"Key": keyed.Key}, doc)
            except DuplicateKeyError:
                return False
            return True
        return self.write_versioned(self._documents, {"Key": keyed.Key}, expected_version, doc)


def key_indexes(adapter: type[MongoKeyedDocuments[Any]]) -> dict[str, list[IndexSpec]]:
    """The one index of a keyed collection, `Key` unique, as a gate's table adds it to the
    MongoDB index catalog (common.store.gates)."""
    return {adapter.COLLECTION: [IndexSpec("key", [("Key", ASCENDING)], {"unique": True})]}
