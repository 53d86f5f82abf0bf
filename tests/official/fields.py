"""Regenerate `sim/api/documented_fields.json` from the official document.

    python -m tests.official.fields          # print the differences
    python -m tests.official.fields --write  # rewrite the file

For every route `sim serve` serves that takes a body, the body model and the
document's request schema are walked side by side: a field the model declares
is the simulator's (modelled; its sub-model is walked in turn), a field only
the document has is recorded under the model's name with the shape of its
value, so the server accepts it, checks its shape and stores it. The shapes
keep what a value must look like (JSON type, enum values, bounds, lengths,
pattern, format, the keys of an object, the items of an array): a kept value
is answered back, and the answer must satisfy the document too.
"""

from __future__ import annotations

import json
import sys
import types
import typing
from typing import Any

from pydantic import BaseModel

from sim.api import create_app
from sim.api.documented import DATA_FILE
from sim.api.schemas import Body
from sim.api.server import SimServer
from tests.official import document


def body_models() -> dict[str, type[Body]]:
    """Every request model of `sim.api`, by name (as the server's own document names them)."""
    found: dict[str, type[Body]] = {}
    todo = [Body]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            # the name is the key of the data file: two models may not share one
            assert found.setdefault(sub.__name__, sub) is sub, f"two request models {sub.__name__}"
            todo.append(sub)
    return found


def _body_model(op: dict[str, Any], models: dict[str, type[Body]]) -> type[Body] | None:
    schema = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
    if schema is None:
        return None
    for option in [schema, *schema.get("anyOf", [])]:
        if "$ref" in option:
            return models[option["$ref"].rsplit("/", 1)[1]]
    return None


def _sub_model(annotation: Any) -> type[Body] | None:
    """The Body model a field holds (directly, optionally or as list items), if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation if issubclass(annotation, Body) else None
    if typing.get_origin(annotation) in (typing.Union, types.UnionType, list):
        for arg in typing.get_args(annotation):
            found = _sub_model(arg)
            if found is not None:
                return found
    return None


def served_bodies() -> list[tuple[str, type[Body], dict[str, Any] | None]]:
    """(route, body model, the document's request schema) of every served route with a body."""
    doc = document.load()
    official = document.operations(doc)
    mine = create_app(SimServer(seed=1)).openapi()["paths"]
    models = body_models()
    found = []
    for path, item in sorted(mine.items()):
        if not path.startswith(document.API_PREFIX):
            continue
        for method, op in sorted(item.items()):
            model = _body_model(op, models)
            if model is None:
                continue
            key = (method.upper(), document.template(path.removeprefix(document.API_PREFIX)))
            _, doc_op = official.get(key, (None, {}))
            schema = (doc_op.get("requestBody", {}).get("content", {})
                      .get("application/json", {}).get("schema"))
            found.append((f"{key[0]} {path}", model, schema))
    return found


def generate() -> dict[str, Any]:
    doc = document.Document(document.load())
    documented: dict[str, dict[str, Any]] = {}
    ours_only: dict[str, set[str]] = {}

    def walk(model: type[Body], schema: dict[str, Any]) -> None:
        schema = doc.resolve(schema)
        if schema.get("type") == "array" and "items" in schema:
            schema = doc.resolve(schema["items"])
        props: dict[str, Any] = {}
        for option in [schema, *schema.get("oneOf", []), *schema.get("anyOf", [])]:
            props.update(doc.resolve(option).get("properties", {}))  # a union: every form's fields
        declared = {f.alias or name: f for name, f in model.model_fields.items()}
        extras = documented.setdefault(model.__name__, {})
        for name, sub in sorted(props.items()):
            if name in declared:
                inner = _sub_model(declared[name].annotation)
                if inner is not None:
                    walk(inner, sub)
            else:
                extras[name] = doc.shape(sub)
        ours_only.setdefault(model.__name__, set()).update(set(declared) - set(props))

    for _, model, schema in served_bodies():
        if schema is not None:
            walk(model, schema)
    return {
        "source": document.SOURCE,
        "documented": {name: fields for name, fields in sorted(documented.items()) if fields},
        "simulator_only": {name: sorted(fields) for name, fields in sorted(ours_only.items())
                           if fields},
    }


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    fresh = render(generate())
    if "--write" in argv:
        DATA_FILE.write_text(fresh)
        print(f"wrote {DATA_FILE}")
        return 0
    current = DATA_FILE.read_text() if DATA_FILE.exists() else ""
    print("up to date" if current == fresh else fresh)
    return 0 if current == fresh else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
