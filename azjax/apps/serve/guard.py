"""The web board's guard: ASGI middleware in front of every route that lets through only
requests for this server from its own page (DNS rebinding, cross-site requests, bodies that
are not JSON, too large or too slow), each refusal one JSON line and a closed connection."""

import asyncio
import json
import logging
import re

from starlette.datastructures import Headers

from azjax.apps.serve.limits import REQUEST_TIMEOUT

__all__ = ["LOCAL_NAMES", "MAX_BODY", "RequestGuard"]

MAX_BODY = 16 * 1024  # bytes; larger requests get 413
LOCAL_NAMES = ("127.0.0.1", "localhost", "::1")  # what a Host header may name, with --host
_SAFE_METHODS = ("GET", "HEAD", "OPTIONS")  # requests that change nothing
_HOST = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::([0-9]{1,5}))?")
_log = logging.getLogger("uvicorn.error")  # shown at uvicorn's log level


class RequestGuard:
    """ASGI middleware that lets through only requests for this server from its own page.

    Refuses (a one-line JSON error, the connection closed): a Host header other than a
    LOCAL_NAMES name, `host` or the address the request came to, with the port served
    (400 without one, 421 otherwise); an Origin header other than such an http:// address on a
    request that may change state (403); a body that is not `application/json` (415) or over
    MAX_BODY (413), or that has not all arrived `timeout` seconds after the request's head
    (408). The body is read here and handed on whole; a client that leaves in its middle is
    one warning line, not a `ClientDisconnect` traceback.

    Args:
      app: the application behind the guard.
      host: the address the server was asked to listen on (`azjax serve --host`).
      timeout: seconds the body may take to arrive.
    """

    def __init__(self, app, *, host: str = "127.0.0.1", timeout: float = REQUEST_TIMEOUT):
        self.app = app
        self.names = {*LOCAL_NAMES, host.lower().strip("[]")}
        self.timeout = timeout

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            await _refuse(send, *refusal)
            return
        if not _has_body(headers):
            await self.app(scope, receive, send)
            return
        body = await self._body(scope, receive, send)
        if body is None:
            return
        delivered = False

        async def replay():
            nonlocal delivered
            if delivered:
                return await receive()
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    def _refusal(self, scope, headers: Headers) -> tuple[int, str] | None:
        """(status, message) for a request refused before its body is read, else None."""
        host = headers.get("host")
        if host is None:
            return 400, "the request has no Host header"
        if not self._ours(host, scope):
            return 421, f"this server does not answer for the host {_shorten(host)!r}"
        origin = headers.get("origin")
        if scope["method"] not in _SAFE_METHODS and origin is not None:
            scheme, _, address = origin.partition("://")
            if scheme.lower() != "http" or not self._ours(address, scope):
                return 403, f"requests from other sites are refused (Origin {_shorten(origin)!r})"
        length = headers.get("content-length", "0")
        if not length.isascii() or not length.isdigit():  # h11 refuses these first
            return 400, "the Content-Length header is not a number"
        if _has_body(headers):
            media = headers.get("content-type", "").split(";")[0].strip().lower()
            if media != "application/json":
                return 415, "send the body as JSON with Content-Type: application/json"
            if len(length.lstrip("0")) > 9 or int(length) > MAX_BODY:
                return 413, f"the body is larger than {MAX_BODY} bytes"
        return None

    def _ours(self, address: str, scope) -> bool:
        """Whether `address` ("name[:port]") names this server: a LOCAL_NAMES name, the
        --host, or the address the request came to, with the port it came to."""
        match = _HOST.fullmatch(address)
        if match is None:
            return False
        name = match[1].lower().strip("[]")
        served = scope.get("server") or (None, None)
        port = int(match[2]) if match[2] else 80
        return (name in self.names or name == served[0]) and port == served[1]

    async def _body(self, scope, receive, send) -> bytes | None:
        """The whole body, or None after refusing it (late, too large) or losing the client."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        chunks, size = [], 0
        while True:
            try:
                message = await asyncio.wait_for(receive(), max(deadline - loop.time(), 0))
            except TimeoutError:
                await _refuse(send, 408, f"the body did not arrive within {self.timeout:g} s")
                return None
            if message["type"] == "http.disconnect":
                address, port = scope.get("client") or ("?", "?")
                _log.warning(
                    "azjax serve: %s:%s left before sending the whole body of %s %s",
                    address,
                    port,
                    scope["method"],
                    _shorten(scope["path"]),
                )
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > MAX_BODY:
                await _refuse(send, 413, f"the body is larger than {MAX_BODY} bytes")
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)


def _has_body(headers: Headers) -> bool:
    """Whether a request (its Content-Length checked by `RequestGuard._refusal`) has a body."""
    return bool(headers.get("content-length", "0").strip("0")) or "transfer-encoding" in headers


async def _refuse(send, status: int, message: str) -> None:
    """Answers {"error": message} with `status` and closes the connection (what the client
    still sends is not read)."""
    body = json.dumps({"error": message}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _shorten(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
