"""Documented request fields the simulator does not model: accepted, checked and stored.

The official OpenAPI document of API v2 has request fields that mean nothing
to a simulated control plane (a project's IP allow-list, a compute's preloaded
libraries, an OAuth provider's tenant). A real client may send any of them, so
every request model accepts, beside its own fields, the ones the document
lists for it in `documented_fields.json` (generated from the document by
`python -m tests.official.fields --write`), checks their shape, and keeps
them; a field that neither the model nor the document has is still refused
("unknown field"). Routes store the kept values and answer them back where
the document's response has a place for them.
"""

from __future__ import annotations

import functools
import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

DATA_FILE = Path(__file__).with_name("documented_fields.json")

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}


@functools.cache
def _documented() -> dict[str, dict[str, Any]]:
    return json.loads(DATA_FILE.read_text())["documented"]


def documented_fields(model: str) -> dict[str, Any]:
    """Field name -> shape, for the fields the document gives `model` beyond its own."""
    return _documented().get(model, {})


def as_json_schema(shape: dict[str, Any]) -> dict[str, Any]:
    """A shape as JSON Schema for the server's own OpenAPI document: objects closed to
    fields they do not list, as the server checks them."""
    out = {k: v for k, v in shape.items() if k != "nullable"}
    if "properties" in out:
        out["properties"] = {k: as_json_schema(v) for k, v in out["properties"].items()}
        out.setdefault("additionalProperties", False)
    if isinstance(out.get("additionalProperties"), dict):
        out["additionalProperties"] = as_json_schema(out["additionalProperties"])
    if "items" in out:
        out["items"] = as_json_schema(out["items"])
    if "oneOf" in out:
        out["oneOf"] = [as_json_schema(s) for s in out["oneOf"]]
    if shape.get("nullable"):
        out = {"anyOf": [out, {"type": "null"}]}
    return out


class ShapeError(ValueError):
    def __init__(self, path: str, reason: str):
        super().__init__(reason)
        self.path = path
        self.reason = reason


def check(value: Any, shape: dict[str, Any], path: str) -> None:
    """Raise ShapeError(path, reason) unless `value` has the documented shape."""
    if value is None:
        if shape.get("nullable"):
            return
        raise ShapeError(path, "may not be null")
    if "oneOf" in shape:
        for option in shape["oneOf"]:
            try:
                check(value, option, path)
                return
            except ShapeError:
                continue
        raise ShapeError(path, "matches none of the documented forms")
    kind = shape.get("type")
    if kind is not None:
        wanted = _JSON_TYPES[kind]
        # bool is an int in Python, never in JSON
        if not isinstance(value, wanted) or (isinstance(value, bool) and bool not in wanted):
            raise ShapeError(path, f"must be {'an' if kind[0] in 'aeiou' else 'a'} {kind}")
    if "enum" in shape and value not in shape["enum"]:
        raise ShapeError(path, f"must be one of {', '.join(map(str, shape['enum']))}")
    _check_bounds(value, shape, path)
    if isinstance(value, dict):
        props = shape.get("properties", {})
        missing = [key for key in shape.get("required", ()) if key not in value]
        if missing:  # a partial object would be answered back, breaking the document's answer
            raise ShapeError(f"{path}.{missing[0]}", "required")
        rest = shape.get("additionalProperties")
        for key, item in value.items():
            if key in props:
                check(item, props[key], f"{path}.{key}")
            elif rest is not None:
                check(item, rest, f"{path}.{key}")
            else:
                raise ShapeError(f"{path}.{key}", "unknown field")
    elif isinstance(value, list) and "items" in shape:
        for i, item in enumerate(value):
            check(item, shape["items"], f"{path}.{i}")


_INT_RANGES = {"int32": 2**31, "int64": 2**63}
_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


def _check_bounds(value: Any, shape: dict[str, Any], path: str) -> None:
    """The document's bounds, lengths, pattern and formats: a kept value is answered
    back, and the answer must satisfy the document too."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in shape and value < shape["minimum"]:
            raise ShapeError(path, f"must be at least {shape['minimum']}")
        if "maximum" in shape and value > shape["maximum"]:
            raise ShapeError(path, f"must be at most {shape['maximum']}")
        bound = _INT_RANGES.get(shape.get("format", ""))
        if bound is not None and not -bound <= value < bound:
            raise ShapeError(path, f"must fit a {shape['format']}")
    if isinstance(value, str):
        if len(value) < shape.get("minLength", 0) or len(value) > shape.get("maxLength", len(value)):
            raise ShapeError(path, f"must be {shape.get('minLength', 0)} to "
                                   f"{shape.get('maxLength', 'any number of')} characters")
        if "pattern" in shape and not re.search(shape["pattern"], value):
            raise ShapeError(path, f"must match {shape['pattern']}")
        if shape.get("format") == "date-time" and not _is_timestamp(value):
            raise ShapeError(path, "must be an RFC 3339 timestamp, such as 2026-01-05T00:00:00Z")
    if isinstance(value, list):
        if len(value) < shape.get("minItems", 0) or len(value) > shape.get("maxItems", len(value)):
            raise ShapeError(path, f"must have {shape.get('minItems', 0)} to "
                                   f"{shape.get('maxItems', 'any number of')} items")


def _is_timestamp(text: str) -> bool:
    if not _RFC3339.match(text):
        return False
    try:
        datetime.fromisoformat(text.upper().replace("Z", "+00:00"))
    except ValueError:
        return False
    return True
