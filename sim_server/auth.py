"""Bearer-token authentication for the gRPC server (an asyncio server interceptor).

Every call must carry the metadata ``authorization: Bearer <token>``; otherwise it ends with
UNAUTHENTICATED before reaching the servicer. The gRPC health service is exempt so that load balancers and
orchestrators can probe without the secret (it reveals nothing but SERVING / NOT_SERVING). Tokens are
compared in constant time.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from typing import Any

import grpc

EXEMPT_PREFIXES = ("/grpc.health.v1.Health/",)


def token_matches(header: str | None, token: str) -> bool:
    """Whether an ``authorization`` header value is ``Bearer <token>`` (constant-time comparison)."""
    if not header:
        return False
    scheme, _, value = header.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), token.encode())


class BearerTokenInterceptor(grpc.aio.ServerInterceptor):
    """Rejects calls without the right bearer token with UNAUTHENTICATED (for ``grpc.aio`` servers)."""

    def __init__(self, token: str, on_reject: Callable[[str], None] | None = None) -> None:
        self.token = token
        self.on_reject = on_reject

    async def intercept_service(self, continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Any]],
                                handler_call_details: grpc.HandlerCallDetails) -> Any:
        method = handler_call_details.method
        if method.startswith(EXEMPT_PREFIXES):
            return await continuation(handler_call_details)
        header = next((v for k, v in handler_call_details.invocation_metadata or () if k == "authorization"),
                      None)
        if isinstance(header, bytes):
            header = header.decode("latin-1")
        if token_matches(header, self.token):
            return await continuation(handler_call_details)
        handler = await continuation(handler_call_details)
        if handler is None:
            return None
        if self.on_reject is not None:
            self.on_reject(method)
        return _rejecting(handler)


def _rejecting(handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
    """A handler of the same shape as ``handler`` that aborts with UNAUTHENTICATED."""
    async def deny(_request: Any, context: grpc.aio.ServicerContext) -> Any:
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or invalid bearer token "
                            "(send metadata 'authorization: Bearer <token>')")

    kwargs = {"request_deserializer": handler.request_deserializer,
              "response_serializer": handler.response_serializer}
    if handler.request_streaming and handler.response_streaming:
        return grpc.stream_stream_rpc_method_handler(deny, **kwargs)
    if handler.request_streaming:
        return grpc.stream_unary_rpc_method_handler(deny, **kwargs)
    if handler.response_streaming:
        return grpc.unary_stream_rpc_method_handler(deny, **kwargs)
    return grpc.unary_unary_rpc_method_handler(deny, **kwargs)
