"""How `sim serve` holds its connections: uvicorn's HTTP/1.1 protocol with the limits a
long-running server needs (docs/reliability.md, "Connections").

- **TCP_NODELAY** on every accepted socket: without it a small response written
  in two pieces (head, then body) waits for the client's delayed ACK, ~40 ms
  on every keep-alive request.
- **A header timeout**: a request head must arrive whole within
  `header_timeout` seconds of the connection opening, or of its first byte
  after the previous answer; else 408 and the connection is closed. (A body
  arriving too slowly gets 408 from `sim.api.limits`.)
- **A cap on connections**, below the descriptor limit: one more gets 503 and
  is closed at once, so `accept()` never runs out of descriptors; if it still
  does (descriptors used elsewhere), the log says so in one line.
- **A lingering close**: a connection closed while the client is still
  sending its body (a 413, a 408) is half-closed after the answer and what
  arrives is read and dropped for up to `LINGER_S`, so the client reads the
  whole answer instead of a reset.
- **A quick stop**: on SIGTERM / SIGINT whatever a request waits for ends
  (`on_stop`: an injected latency answers 503, not applied); a request whose
  body has not arrived whole within `STOP_BODY_WAIT_S` is answered 503 (it was
  not applied) instead of holding the exit until its body timeout; requests
  being handled get `GRACEFUL_STOP_S` to finish, then their connection is
  closed without an answer (their outcome is unknown to the client, as after
  any lost connection) and nothing is logged for them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import resource
import socket
import sys
from collections.abc import Callable
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from sim.rules.errors import STOPPING

log = logging.getLogger("sim.api.serving")

DEFAULT_HEADER_TIMEOUT_S = 10.0
#: descriptors kept free of connections: the state file and its companions, the log, the
#: event loop's own, and one for each connection being refused
FD_RESERVE = 64
LINGER_S = 2.0  # a lingering close reads and drops what the client still sends, this long
STOP_LINGER_S = 0.25  # ... and this long once the server is stopping
STOP_BODY_WAIT_S = 0.5  # a body still arriving when the server is asked to stop: its time
#: requests being handled when a stop is asked may take this long (then their connection is
#: closed): short, so that a stop, its snapshot included, is over within 2 s
GRACEFUL_STOP_S = 0.5


def descriptor_limit() -> int:
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def default_max_connections() -> int:
    """The most connections the descriptor limit allows with `FD_RESERVE` kept free."""
    limit = descriptor_limit()
    if limit == resource.RLIM_INFINITY:
        return 65_536
    return max(1, limit - FD_RESERVE)


def raw_answer(status: int, reason: str, code: str, message: str) -> bytes:
    """A whole HTTP/1.1 error answer with the API's error body, closing the connection (for
    the moments no request is there to answer through the app: a head that never came)."""
    body = json.dumps({"code": code, "message": message, "request_id": None}).encode()
    head = (f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n")
    return head.encode("latin-1") + body


class _Lingering:
    """The connection's transport, whose `close()` lingers while the client may still send.

    uvicorn closes the transport right after an answer with `connection: close`; a client
    still sending its body then gets a reset, and may lose the answer with it."""

    def __init__(self, transport: asyncio.Transport, protocol: SimH11Protocol):
        self._transport = transport
        self._protocol = protocol
        self.lingering = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)

    def is_closing(self) -> bool:
        return self.lingering or self._transport.is_closing()

    def close(self) -> None:
        their = self._protocol.conn.their_state
        if their is h11.SEND_BODY or their is h11.ERROR:
            self.linger()
        else:
            self._transport.close()

    def linger(self, seconds: float = LINGER_S) -> None:
        """Send what is buffered and a FIN, read and drop until the client closes or
        `seconds` pass, then close."""
        transport = self._transport
        if self.lingering or transport.is_closing():
            return
        self.lingering = True
        if not transport.can_write_eof():
            transport.close()
            return
        transport.write_eof()
        transport.resume_reading()
        self._protocol.loop.call_later(seconds, transport.close)


class SimH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with the limits above (set on a subclass by `protocol_class`)."""

    header_timeout: float | None = DEFAULT_HEADER_TIMEOUT_S
    max_connections: int = 1024

    _head_timer: asyncio.TimerHandle | None = None
    _refused = False
    _lingering: _Lingering | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:  # the client is already gone
                pass
        if len(self.connections) >= self.max_connections:
            self._refused = True
            self.transport = transport
            log.warning("%d connections open (--max-connections): one more refused with 503",
                        len(self.connections))
            transport.write(raw_answer(503, "Service Unavailable", "SERVICE_UNAVAILABLE",
                                       f"too many connections (at most "
                                       f"{self.max_connections}); retry later"))
            transport.close()
            return
        self._lingering = _Lingering(transport, self)
        super().connection_made(self._lingering)  # type: ignore[arg-type]
        self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._refused:
            return
        self._disarm_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused or (self._lingering is not None and self._lingering.lingering):
            return  # answered and closing: what the client still sends is dropped
        if self.conn.their_state is h11.IDLE:
            self._arm_head_timer()  # the first bytes of a head after a kept-alive answer
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:
            self._disarm_head_timer()  # the head is whole

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # pipelined: the next head may already be buffered (and whole, or not)
        if self.conn.their_state is h11.IDLE and self.conn.trailing_data[0]:
            self._arm_head_timer()

    # -- the header timeout ------------------------------------------------------------------
    def _arm_head_timer(self) -> None:
        if self.header_timeout is not None and self._head_timer is None:
            self._head_timer = self.loop.call_later(self.header_timeout, self._head_timed_out)

    def _disarm_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.conn.their_state is not h11.IDLE or self.transport.is_closing():
            return
        self._unset_keepalive_if_required()
        assert self._lingering is not None
        if not self.conn.trailing_data[0]:  # not a byte of a request: closed as if idle
            self._lingering.close()
            return
        self.transport.write(raw_answer(408, "Request Timeout", "REQUEST_TIMEOUT",
                                        f"the request head did not arrive whole within "
                                        f"{self.header_timeout:g} s"))
        self._lingering.linger()

    # -- stopping --------------------------------------------------------------------------
    def _body_pending(self) -> bool:
        """A request whose head came but whose body is still arriving, unanswered (under
        `sim serve` the app reads a body whole before it applies anything)."""
        cycle = self.cycle
        return (cycle is not None and not cycle.response_started and cycle.more_body
                and self.conn.their_state is h11.SEND_BODY
                and self.conn.our_state is h11.SEND_RESPONSE)

    def shutdown(self) -> None:
        """The server is stopping: a request being handled finishes; one still sending its
        body has `STOP_BODY_WAIT_S` to finish it, then is answered 503 (not applied); an
        idle connection is closed."""
        self._disarm_head_timer()
        lingering = self._lingering
        if self._body_pending():
            self.cycle.keep_alive = False
            self.loop.call_later(STOP_BODY_WAIT_S, self._stop_body_wait_over)
            return
        if lingering is not None and lingering.lingering:
            self.loop.call_later(STOP_LINGER_S, lingering._transport.close)
            return
        super().shutdown()

    def abandon(self) -> None:
        """The stop's drain is over and this connection's request is still being handled:
        close the connection without an answer; what the handler sends later is dropped."""
        cycle = self.cycle
        if cycle is None or cycle.response_complete:
            return
        cycle.disconnected = True
        cycle.message_event.set()
        self.transport.close()

    def _stop_body_wait_over(self) -> None:
        if not self._body_pending() or self.transport.is_closing():
            return
        cycle = self.cycle
        body = json.dumps({"code": "SERVICE_UNAVAILABLE", "message": STOPPING,
                           "request_id": None}).encode()
        cycle.response_started = cycle.response_complete = True
        cycle.disconnected = True  # the app reading the body hears that the client left
        cycle.message_event.set()
        try:
            self.transport.write(self.conn.send(h11.Response(status_code=503, headers=[
                (b"content-type", b"application/json"), (b"connection", b"close"),
                (b"content-length", str(len(body)).encode())], reason=b"Service Unavailable")))
            self.transport.write(self.conn.send(h11.Data(data=body)))
            self.transport.write(self.conn.send(h11.EndOfMessage()))
        except h11.LocalProtocolError:
            pass
        assert self._lingering is not None
        self._lingering.linger(STOP_LINGER_S)


def protocol_class(*, header_timeout: float | None, max_connections: int) -> type[SimH11Protocol]:
    return type("SimServeProtocol", (SimH11Protocol,),  # type: ignore[return-value]
                {"header_timeout": header_timeout, "max_connections": max_connections})


def _one_line_accept_errors(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """Out of descriptors in accept(): one line (asyncio retries a second later), not a
    traceback; anything else as asyncio reports it."""
    err = context.get("exception")
    if isinstance(err, OSError) and "accept" in str(context.get("message", "")):
        log.warning("cannot accept a connection: %s; retrying (lower --max-connections or "
                    "raise ulimit -n)", err.strerror or err)
        return
    loop.default_exception_handler(context)


class _QuietWhenAbandoned:
    """The app, for which a request abandoned at a stop (`SimH11Protocol.abandon`) ends
    without a traceback: uvicorn cancels its task, and would log the cancellation as an
    error of the application."""

    def __init__(self, app: Any, stopping: Callable[[], bool]):
        self.app = app
        self.stopping = stopping

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await self.app(scope, receive, send)
        except asyncio.CancelledError:
            if not self.stopping():
                raise
            # the connection is closed (abandoned at the stop); the handler's thread may
            # still finish what it started, its answer is dropped


def run(app: object, listener: socket.socket, *, log_level: str,
        header_timeout: float | None = DEFAULT_HEADER_TIMEOUT_S,
        max_connections: int | None = None,
        on_stop: Callable[[], None] | None = None) -> None:
    """uvicorn on `listener` until SIGTERM or SIGINT; then `on_stop` is called (whatever a
    request waits for ends), requests being handled finish (`GRACEFUL_STOP_S` at most,
    then their connections are closed) and this returns, so the state file is closed
    cleanly and the exit status is 0."""

    class Draining(uvicorn.Server):
        def handle_exit(self, sig: int, frame: object) -> None:
            super().handle_exit(sig, frame)  # type: ignore[arg-type]
            getattr(self, "_captured_signals", []).clear()  # not re-raised after the drain
            if on_stop is not None:
                on_stop()

        async def _wait_tasks_to_complete(self) -> None:
            try:
                await super()._wait_tasks_to_complete()
            except asyncio.CancelledError:  # GRACEFUL_STOP_S is over: uvicorn cancels next
                for connection in list(self.server_state.connections):
                    if isinstance(connection, SimH11Protocol):
                        connection.abandon()
                raise

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            asyncio.get_running_loop().set_exception_handler(_one_line_accept_errors)
            await super().startup(sockets)

    logging.basicConfig(level=log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    protocol = protocol_class(header_timeout=header_timeout,
                              max_connections=max_connections or default_max_connections())
    app = _QuietWhenAbandoned(app, lambda: server.should_exit)
    config = uvicorn.Config(app, log_level=log_level, access_log=False,  # type: ignore[arg-type]
                            ws="none", lifespan="off", http=protocol,
                            timeout_graceful_shutdown=GRACEFUL_STOP_S)
    server = Draining(config)
    server.run(sockets=[listener])
