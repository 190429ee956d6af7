"""Whether the client's models and OSS's OpenAPI document describe the same JSON.

The two are compared as JSON Schemas (the client's from pydantic), one reading what the other
writes:
- an answer: the document writes, the client reads. Everything the document allows must parse
  (a value that may be null, a field that may be absent, every enum value);
- a request: the client writes, the document reads. What the client sends has the document's
  shape; the values themselves (patterns, bounds, enums, a task type's parameters) are the
  server's to check, and it answers InvalidInput naming the field.
Either way both name the same fields: a field the API adds, renames or drops fails here until
the client follows. Titles, descriptions, patterns and bounds are not compared.

`compare` returns the problems found, each naming where (`TaskDetail.Steps[].Items`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

Mode = Literal["answer", "request"]
EVERY_JSON_TYPE = {"null", "boolean", "number", "string", "array", "object"}


@dataclass(frozen=True)
class Side:
    """One side's schemas: `defs` are what its `$ref`s name (`#/components/schemas/X`, `#/$defs/X`)."""

    name: str  # "document" or "client", for the problems' words
    defs: dict[str, Any]

    def resolve(self, node: dict[str, Any]) -> dict[str, Any]:
        seen = 0
        while "$ref" in node:
            node = self.defs[node["$ref"].rsplit("/", 1)[-1]]
            seen += 1
            assert seen < 50, "a $ref cycle without content"
        return node

    def alternatives(self, node: dict[str, Any]) -> list[dict[str, Any]]:
        """The schema as a flat list of its alternatives (anyOf / oneOf unfolded, refs followed)."""
        node = self.resolve(node)
        if "type" in node or "properties" in node:
            return [node]  # an anyOf beside them adds a rule ("at least one of these fields"), not alternatives
        for key in ("anyOf", "oneOf"):
            if key in node:
                return [alt for branch in node[key] for alt in self.alternatives(branch)]
        if "allOf" in node and len(node["allOf"]) == 1:
            return self.alternatives(node["allOf"][0])
        return [node]


def kind(node: dict[str, Any]) -> str:
    if "enum" in node or "const" in node:
        return "enum"
    return node.get("type", "any")


def enum_values(node: dict[str, Any]) -> set[str]:
    values = node["enum"] if "enum" in node else [node["const"]]
    return {json.dumps(v) for v in values}  # json text: false and 0 stay apart


def enum_fits(values: set[str], scalar: str) -> bool:
    types = {type(json.loads(v)) for v in values}
    allowed = {"string": {str}, "boolean": {bool}, "integer": {int}, "number": {int, float}, "null": {type(None)}}
    return types <= allowed.get(scalar, set())


def map_values(node: dict[str, Any]) -> dict[str, Any] | None:
    """An object's value schema when it is a map ({} for any value); None for a fixed shape."""
    if "properties" in node:
        return None
    patterns = list(node.get("patternProperties", {}).values())
    if patterns:
        return patterns[0] if len(patterns) == 1 else {"anyOf": patterns}
    extra = node.get("additionalProperties", True)
    return {} if extra is True or extra is False else extra


@dataclass
class Comparison:
    client: Side
    document: Side
    mode: Mode
    problems: list[str] = field(default_factory=list)
    _comparing: set[tuple[int, int]] = field(default_factory=set)

    @property
    def reader(self) -> Side:
        return self.client if self.mode == "answer" else self.document

    @property
    def writer(self) -> Side:
        return self.document if self.mode == "answer" else self.client

    def check(self, where: str, reader: dict[str, Any], writer: dict[str, Any], *, never_null: bool = False) -> bool:
        """Every alternative the writer may produce is read by one of the reader's. `never_null`:
        the writer leaves the field out rather than send null (the client's None)."""
        readers = self.reader.alternatives(reader)
        kinds = {kind(r) for r in readers}
        if "any" in kinds or EVERY_JSON_TYPE <= kinds:  # StoredJson: any JSON value
            return True
        ok = True
        for written in self.writer.alternatives(writer):
            if never_null and kind(written) == "null":
                continue
            tried = [self._attempt(where, r, written) for r in readers]
            if not any(found is not None and not found for found in tried):
                ok = False
                specific = [found for found in tried if found]
                self.problems += specific[0] if specific else [
                    f"{where}: the {self.writer.name} has {kind(written)}, the {self.reader.name} "
                    f"reads only {sorted({kind(r) for r in readers})}"
                ]
        return ok

    def _attempt(self, where: str, reader: dict[str, Any], written: dict[str, Any]) -> list[str] | None:
        """The problems of reading `written` with `reader`: [] if it reads; None if they are not
        even of one kind (another alternative may fit)."""
        saved, self.problems = self.problems, []
        try:
            fits = self._pair(where, reader, written)
            return None if fits is None else self.problems
        finally:
            self.problems = saved

    def _pair(self, where: str, reader: dict[str, Any], written: dict[str, Any]) -> bool | None:
        r, w = kind(reader), kind(written)
        if w == "any":
            return self.mode == "request" or None  # a request's free value is the server's to judge
        if w == "enum":
            if r == "enum":
                extra = enum_values(written) - enum_values(reader)
                if extra:
                    self.problems.append(f"{where}: {self.reader.name} does not take {sorted(extra)}")
                return not extra
            return enum_fits(enum_values(written), r) or None
        if r == "enum":  # the reader limits the values: a request's are checked by the server
            return (self.mode == "request" and enum_fits(enum_values(reader), w)) or None
        if w != r and not (w == "integer" and r == "number"):
            return None
        if w == "array":
            return self.check(f"{where}[]", reader.get("items", {}), written.get("items", {}))
        if w == "object":
            return self._objects(where, reader, written)
        return True

    def _objects(self, where: str, reader: dict[str, Any], written: dict[str, Any]) -> bool:
        pair = (id(reader), id(written))
        if pair in self._comparing:
            return True  # a recursive shape (StoredJson, a sub-flow's steps): compared once
        self._comparing.add(pair)
        try:
            read_map, written_map = map_values(reader), map_values(written)
            if read_map is not None and written_map is not None:
                return self.check(f"{where}{{}}", read_map, written_map)
            if read_map is not None:  # fixed fields read as a map (a lock document as a dict)
                return all([self.check(f"{where}.{name}", read_map, schema)
                            for name, schema in written["properties"].items()])  # fmt: skip
            if written_map is not None:  # a free mapping for a fixed shape: the server judges a request's
                return self.mode == "request" or self._fail(f"{where}: the {self.writer.name} has a free mapping")
            return self._fields(where, reader, written)
        finally:
            self._comparing.discard(pair)

    def _fields(self, where: str, reader: dict[str, Any], written: dict[str, Any]) -> bool:
        read_fields, written_fields = reader["properties"], written["properties"]
        ok = True
        documented, modelled = (written_fields, read_fields) if self.writer is self.document else (read_fields, written_fields)
        for names, side, other in ((set(documented) - set(modelled), "document", "client"),
                                   (set(modelled) - set(documented), "client", "document")):  # fmt: skip
            if names:
                ok = self._fail(f"{where}: {sorted(names)} in the {side}, not in the {other}")
        for name in sorted(set(read_fields) & set(written_fields)):
            left_out_when_none = self.writer is self.client and written_fields[name].get("default", 0) is None
            ok = self.check(f"{where}.{name}", read_fields[name], written_fields[name],
                            never_null=left_out_when_none) and ok  # fmt: skip
        optional = set(written_fields) - self._required(written, self.writer)
        needed = sorted(self._required(reader, self.reader) & optional)
        if needed:
            ok = self._fail(f"{where}: {needed} required by the {self.reader.name}, "
                            f"may be left out by the {self.writer.name}")  # fmt: skip
        return ok

    def _required(self, node: dict[str, Any], side: Side) -> set[str]:
        """Fields always present. The client sends every field of a request but those it leaves
        out when None (their default); a model's `required` says it elsewhere."""
        required = set(node.get("required", []))
        if side is self.client and self.mode == "request":
            required = {name for name, schema in node["properties"].items() if schema.get("default", 0) is not None}
        return required

    def _fail(self, problem: str) -> bool:
        self.problems.append(problem)
        return False


def compare(client_schema: dict[str, Any], document: dict[str, Any], node: dict[str, Any], mode: Mode,
            where: str) -> list[str]:  # fmt: skip
    """The problems between a client model's JSON schema (pydantic's, its `$defs` inside) and a
    schema node of the document (`{"$ref": "#/components/schemas/TaskDetail"}`)."""
    client = Side("client", client_schema.get("$defs", {}))
    comparison = Comparison(client, Side("document", document["components"]["schemas"]), mode)
    reader, writer = (client_schema, node) if mode == "answer" else (node, client_schema)
    comparison.check(where, reader, writer)
    return comparison.problems
