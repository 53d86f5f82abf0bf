"""A state file served as far as it can be proven: the world up to the last journal row a
restart could apply, read only (`sim serve --state FILE`, `sim.api.restore`).

A row the restart cannot apply (its replay raises, or answers otherwise than the first time:
the file and this version of `sim` disagree) stops the replay there. The server then serves
the world up to the row before it and leaves the file exactly as it found it: the rows not
applied are kept for a version of `sim` that can apply them. Nothing is written to the file
while it is held (no journal row, no snapshot, no key, not even the mark that a server has it
open), so no row of it can be lost or overwritten. Every call that would change the world
answers 503 `STATE_FILE_HELD`, naming the row; reads are served, each answer carrying the
header `sim-state-held` (the row that was not applied), and `GET /_sim/state` says it all.
The clock is held too (a realtime clock would move the world past what the file proves).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.datastructures import MutableHeaders
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sim.api.journal import READ_ONLY_ROUTES, READS

if TYPE_CHECKING:
    from fastapi import FastAPI

    from sim.api.server import SimServer

HEADER = "sim-state-held"
CODE = "STATE_FILE_HELD"
#: characters of a reason kept (a refusal's answer may be long; the line stays one line)
REASON_CHARS = 300


@dataclass(frozen=True)
class Unapplied:
    """The journal row a restart could not apply, and what is served instead."""

    file: str
    seq: int
    kind: str  # request | advance | clock | faults | reset
    method: str | None
    path: str | None
    t: float  # the simulated instant the row was applied at the first time
    reason: str  # one line
    applied_through: int  # the last row applied (0: none; the snapshot's or the built world)
    not_applied: int  # rows of the file not applied: this one and every one after it

    @property
    def row(self) -> str:
        what = f"{self.method} {self.path}" if self.method else self.kind
        return f"row {self.seq} ({what} at {self.t:g} s)"

    def line(self) -> str:
        """What the banner and the log say, in one line."""
        return (f"{self.file}: journal {self.row} cannot be applied: {self.reason}; serving "
                f"the world up to row {self.applied_through}, read only, the file unchanged "
                f"({self.not_applied} rows kept for a version of sim that applies them)")

    def refusal(self) -> str:
        return (f"the state file is held read only: journal {self.row} cannot be applied by "
                f"this version of sim ({self.reason}); the world is served up to row "
                f"{self.applied_through} and nothing is written to the file (see GET "
                f"/_sim/state)")

    def view(self) -> dict[str, Any]:
        return {"seq": self.seq, "kind": self.kind, "method": self.method, "path": self.path,
                "seconds": self.t, "reason": self.reason,
                "applied_through": self.applied_through, "not_applied": self.not_applied}


def one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= REASON_CHARS else text[:REASON_CHARS - 3] + "..."


class HeldMiddleware:
    """With a held file: 503 for every call that would change the world, the header on
    every answer."""

    def __init__(self, app: ASGIApp, server: SimServer):
        self.app = app
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        held = self.server.held
        if scope["type"] != "http" or held is None:
            await self.app(scope, receive, send)
            return
        header = f"row {held.seq}"
        if scope["method"] not in READS and scope["path"] not in READ_ONLY_ROUTES:
            request_id = scope.get("state", {}).get("request_id")
            body = {"code": CODE, "message": held.refusal(), "request_id": request_id}
            await JSONResponse(body, status_code=503, headers={HEADER: header})(
                scope, receive, send)
            return

        async def marked(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message)[HEADER] = header
            await send(message)

        await self.app(scope, receive, marked)


def install(app: FastAPI, server: SimServer) -> None:
    app.add_middleware(HeldMiddleware, server=server)


__all__ = ["CODE", "HEADER", "HeldMiddleware", "Unapplied", "install", "one_line"]
