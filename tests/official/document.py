"""The official OpenAPI document of the real API v2, from its npm package.

`public-v2-for-users.gen.yaml` ships inside `@neondatabase/api-client`; the
version is pinned here so every run reads the same document. `npm pack`
fetches the tarball once into a cache directory outside the git tree
(`SIM_NPM_CACHE`, default `~/.cache/sim-official`); without npm the tests
that need the document are skipped and say why, and with npm a failed fetch
is a failure.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import re
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import yaml

PACKAGE = "@neondatabase/api-client"
VERSION = "2.7.3"
SOURCE = f"{PACKAGE}@{VERSION}"
MEMBER = "package/public-v2-for-users.gen.yaml"
#: of the document in that version: the same bytes on every machine
SHA256 = "dacf72ea2d63110b3694c705313e0b2104e9652ae1be3fc01ceebe7b17059c44"
API_PREFIX = "/api/v2"


class Unavailable(Exception):
    """The document cannot be had here: npm is not installed (the one reason to skip)."""


def cache_dir() -> Path:
    root = os.environ.get("SIM_NPM_CACHE") or Path.home() / ".cache" / "sim-official"
    return Path(root) / f"api-client-{VERSION}"


def document_path() -> Path:
    """The YAML file, fetched with `npm pack` the first time."""
    target = cache_dir() / "public-v2-for-users.gen.yaml"
    if target.exists():
        return target
    npm = shutil.which("npm")
    if npm is None:
        raise Unavailable(f"npm is not installed: cannot fetch {SOURCE}")
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # test processes in parallel fetch it once
        if not target.exists():
            _fetch(npm, target)
    return target


def _fetch(npm: str, target: Path) -> None:
    done = subprocess.run([npm, "pack", SOURCE, "--silent", "--pack-destination",
                           str(target.parent)], capture_output=True, text=True, timeout=300)
    if done.returncode != 0:  # npm is here, so the document must be: a failure, not a skip
        raise RuntimeError(f"npm pack {SOURCE} failed: {done.stderr.strip()[-300:]}")
    tarball = target.parent / done.stdout.strip().splitlines()[-1]
    with tarfile.open(tarball) as tar:
        source = tar.extractfile(MEMBER)
        if source is None:
            raise RuntimeError(f"{SOURCE} has no {MEMBER}")
        text = source.read()
    if hashlib.sha256(text).hexdigest() != SHA256:
        raise RuntimeError(f"{SOURCE}: {MEMBER} is not the document this version pins")
    partial = target.with_suffix(".part")
    partial.write_bytes(text)
    partial.replace(target)  # atomic: a reader never sees half a file


@functools.cache
def load() -> dict[str, Any]:
    return yaml.safe_load(document_path().read_text())


def template(path: str) -> str:
    """A path with its parameters unnamed, to match routes whatever the names."""
    return re.sub(r"\{[^}]+\}", "{}", path)


def operations(doc: dict[str, Any]) -> dict[tuple[str, str], tuple[str, dict[str, Any]]]:
    """(METHOD, path template) -> (the document's path, its operation)."""
    found = {}
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if method in ("get", "post", "put", "patch", "delete"):
                found[(method.upper(), template(path))] = (path, op)
    return found


#: how deep a shape is followed (the document has no deeper request objects; a guard on cycles)
MAX_DEPTH = 8


class Document:
    def __init__(self, doc: dict[str, Any]):
        self.doc = doc

    def resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        """$ref followed and allOf merged: one plain schema."""
        while "$ref" in schema:
            name = schema["$ref"].removeprefix("#/components/schemas/")
            schema = {**self.doc["components"]["schemas"][name],
                      **{k: v for k, v in schema.items() if k != "$ref"}}
        if "allOf" in schema:
            merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
            for part in schema["allOf"]:
                part = self.resolve(part)
                for k, v in part.items():
                    if k == "properties":
                        merged.setdefault("properties", {}).update(v)
                    elif k == "required":
                        merged["required"] = sorted({*merged.get("required", []), *v})
                    else:
                        merged.setdefault(k, v)
            schema = merged
        return schema

    def shape(self, schema: dict[str, Any], depth: int = 0) -> dict[str, Any]:
        """What a value must look like: type, enum, bounds, format, properties (and which
        are required), items."""
        schema = self.resolve(schema)
        if depth > MAX_DEPTH:
            return {}
        out: dict[str, Any] = {}
        if "oneOf" in schema or "anyOf" in schema:
            out["oneOf"] = [self.shape(s, depth + 1) for s in schema.get("oneOf", schema.get("anyOf"))]
        for k in ("type", "enum", "nullable", "format", "pattern", "minimum", "maximum",
                  "minLength", "maxLength", "minItems", "maxItems", "required"):
            if k in schema:
                out[k] = schema[k]
        if "properties" in schema:
            out["type"] = "object"
            out["properties"] = {name: self.shape(s, depth + 1)
                                 for name, s in sorted(schema["properties"].items())
                                 if not self.resolve(s).get("readOnly")}
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            out["additionalProperties"] = self.shape(extra, depth + 1)
        elif extra is True or (out.get("type") == "object" and "properties" not in schema):
            out["additionalProperties"] = {}
        if "items" in schema:
            out["items"] = self.shape(schema["items"], depth + 1)
        return out

    def closed(self, schema: dict[str, Any], depth: int = 0) -> dict[str, Any]:
        """`schema` inlined, every object with properties closed to other fields.

        The document leaves objects open (JSON Schema's default), so a generator
        would add made-up fields to valid bodies; the simulator refuses fields the
        document does not have, so a body with one is an invalid body."""
        schema = dict(self.resolve(schema))
        if depth > MAX_DEPTH:
            return schema
        for key in ("oneOf", "anyOf"):
            if key in schema:
                schema[key] = [self.closed(s, depth + 1) for s in schema[key]]
        if "properties" in schema:
            schema["properties"] = {k: self.closed(v, depth + 1)
                                    for k, v in schema["properties"].items()}
            schema.setdefault("additionalProperties", False)
        if isinstance(schema.get("additionalProperties"), dict):
            schema["additionalProperties"] = self.closed(schema["additionalProperties"], depth + 1)
        if "items" in schema:
            schema["items"] = self.closed(schema["items"], depth + 1)
        schema.pop("discriminator", None)  # its mapping names the components inlined here
        return schema
