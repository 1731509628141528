"""Two small pieces of raw ASGI the service's pure layers share: read a body, send JSON."""

from __future__ import annotations

import orjson


class ClientGone(Exception):
    """The client disconnected before its body was whole: nobody is left to answer, and the part
    that came must not be acted on (a body cut short can still parse: uvicorn hands the app a
    disconnect, and treating it as the end wrote a request nobody saw acknowledged)."""


async def read_body(receive, limit: int | None = None) -> bytes | None:
    """The request's whole body, or None as soon as it grows past ``limit`` bytes. Raises
    ``ClientGone`` if the client disconnects first."""
    body, more = b"", True
    while more:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone
        body += message.get("body", b"")
        more = message.get("more_body", False)
        if limit is not None and len(body) > limit:
            return None
    return body


async def send_json(send, status: int, payload, headers: list | None = None) -> None:
    """A whole JSON response (orjson; numpy values allowed) with its length."""
    data = orjson.dumps(payload, option=orjson.OPT_SERIALIZE_NUMPY)
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()), *(headers or [])]})
    await send({"type": "http.response.body", "body": data})
