"""The HTTP side app (FastAPI, own port): liveness, readiness, live sessions, Prometheus metrics.

Routes: ``GET /healthz`` (the process answers), ``GET /readyz`` (503 while starting or draining),
``GET /sessions`` (JSON), ``GET /metrics`` (Prometheus text format 0.0.4), OpenAPI docs at ``/docs``.
With a server token, /sessions and /metrics need ``Authorization: Bearer <token>`` (401 otherwise);
the probes stay open.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from fastapi import Depends, FastAPI, Header, HTTPException, Response

from sim_server.auth import token_matches
from sim_server.metrics import ServerMetrics
from sim_server.sessions import SessionManager
from vectorworld import DT_S, __version__
from vectorworld.wire import codec

PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def create_http_app(manager: SessionManager, metrics: ServerMetrics, is_ready: Callable[[], bool],
                    token: str | None = None) -> FastAPI:
    """Build the side app over the gRPC server's session manager and metrics."""
    app = FastAPI(title="VectorWorld simulator side app", version=__version__,
                  description="Health, readiness, sessions and Prometheus metrics of `vectorworld serve`. "
                              "The simulation API itself is gRPC (vectorworld.v1.SimulatorService).")

    def require_token(authorization: str | None = Header(default=None)) -> None:
        if token is not None and not token_matches(authorization, token):
            raise HTTPException(status_code=401, detail="missing or invalid bearer token",
                                headers={"WWW-Authenticate": "Bearer"})

    @app.get("/healthz", summary="Liveness: the process answers")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", summary="Readiness: serving and not draining (503 otherwise)")
    def readyz(response: Response) -> dict[str, Any]:
        ready = is_ready() and not manager.draining
        if not ready:
            response.status_code = 503
        return {"ready": ready, "sessions": len(manager), "max_sessions": manager.max_sessions}

    @app.get("/sessions", summary="Live sessions, oldest first", dependencies=[Depends(require_token)])
    def sessions() -> dict[str, Any]:
        now = time.monotonic()
        out = []
        for managed in manager.list():
            session = managed.session
            out.append({
                "session_id": managed.id,
                "step": session.step_index,
                "sim_time_us": session.step_index * int(round(DT_S * 1e6)),
                "state": "finished" if session.done else "running",
                "end_reason": session.end_reason.value,
                "km": session.metrics.distance_m / 1000.0,
                "age_s": round(now - managed.created_s, 3),
                "idle_s": round(now - managed.last_used_s, 3),
                "failed": managed.failure is not None,
                "config": codec.config_dict(session.config),
            })
        return {"sessions": out, "count": len(out), "max_sessions": manager.max_sessions}

    @app.get("/metrics", summary="Prometheus metrics", dependencies=[Depends(require_token)],
             response_class=Response)
    def prometheus() -> Response:
        return Response(content=metrics.render(), media_type=PROMETHEUS_CONTENT_TYPE)

    return app
