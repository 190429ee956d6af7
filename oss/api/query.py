"""Unknown query parameters are refused, as unknown body fields are: `?stauts=4` answering every
task would hide the typo behind a plausible page. A parameter that takes one value is refused when
it comes twice (`?key=a&key=b`): the server would otherwise pick one of them silently. Numbers in a query are plain ASCII: `limit=1_0`,
` 5` or `+5` are refused as `٣` is (pydantic alone would read the first three)."""

from __future__ import annotations

import re
import types
import typing

from fastapi import Request
from pydantic import BeforeValidator
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from oss.api.auth import authenticate_first
from oss.api.errors import ApiError


async def known_query_only(request: Request) -> None:  # pure: see oss/api/auth.py
    route = request.scope.get("route")
    if not isinstance(route, APIRoute):
        return
    authenticate_first(request)  # a caller without a token learns nothing of what the route takes
    if not request.scope.get("query_string"):  # nothing to check (a submission has no query)
        return
    declared = _names(route.dependant)  # a walk of a few nodes: not worth a cache
    unknown = sorted({name for name in request.query_params if name not in declared})
    if unknown:
        accepted = ", ".join(sorted(declared)) or "none"
        raise ApiError(422, "the request is not valid",
                       fields=[(f"query.{name[:100]}", f"unknown query parameter (accepted: {accepted})")
                               for name in unknown[:20]])  # fmt: skip
    repeated = sorted({name for name in request.query_params
                       if not declared[name] and len(request.query_params.getlist(name)) > 1})  # fmt: skip
    if repeated:
        raise ApiError(422, "the request is not valid",
                       fields=[(f"query.{name}", "given more than once; this parameter takes one value")
                               for name in repeated])  # fmt: skip


def _names(dependant: Dependant) -> dict[str, bool]:
    """Each query parameter's name, and whether it takes a list (may be repeated)."""
    names = {param.alias: _is_list(param.field_info.annotation) for param in dependant.query_params}
    for dependency in dependant.dependencies:
        names |= _names(dependency)
    return names


def _is_list(annotation: object) -> bool:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(_is_list(arm) for arm in typing.get_args(annotation))
    return typing.get_origin(annotation) in (list, tuple, set, frozenset)


def _written_as(pattern: str, words: str) -> BeforeValidator:
    form = re.compile(pattern)

    def check(value: object) -> object:
        if isinstance(value, str) and not form.fullmatch(value):
            raise ValueError(words)
        return value

    return BeforeValidator(check)


# Placed after Query(...) in the Annotated: the bounds then stay in the published schema. A
# JSON Schema integer admits a zero fraction (3.0 is the integer 3), and a client generating its
# requests from the published document may write one: taken, as pydantic reads it, as 3.
ASCII_INT = _written_as(r"[0-9]{1,18}(?:\.0{1,18})?", "must be a whole number in ASCII digits")
ASCII_NUMBER = _written_as(r"[0-9]{1,20}(?:\.[0-9]{1,20})?(?:[eE][-+]?[0-9]{1,3})?", "must be a number in ASCII digits, like 30 or 2.5")
