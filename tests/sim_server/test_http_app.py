"""The FastAPI side app: probes, sessions JSON, Prometheus metrics, auth, OpenAPI; and on a real port."""

from __future__ import annotations

import httpx
from fastapi.testclient import TestClient

from sim_server.http_app import create_http_app
from sim_server.metrics import ServerMetrics
from sim_server.server import create_server
from sim_server.sessions import SessionManager
from tests.sim_server.conftest import TEST_DEFAULTS, server_config


def make_app(token: str | None = None, ready: bool = True) -> tuple[TestClient, SessionManager, ServerMetrics]:
    manager = SessionManager(max_sessions=3, idle_timeout_s=60.0)
    metrics = ServerMetrics(lambda: float(len(manager)))
    return TestClient(create_http_app(manager, metrics, lambda: ready, token)), manager, metrics


def test_probes_sessions_and_metrics() -> None:
    http, manager, metrics = make_app()
    assert http.get("/healthz").json() == {"status": "ok"}
    assert http.get("/readyz").status_code == 200
    managed, _ = manager.create(TEST_DEFAULTS)
    manager.step(managed.id, None, 0)
    metrics.steps.inc()
    metrics.step_latency.observe(0.003)
    metrics.errors.inc("NOT_FOUND")
    body = http.get("/sessions").json()
    assert body["count"] == 1 and body["sessions"][0]["session_id"] == managed.id
    assert body["sessions"][0]["step"] == 1 and body["sessions"][0]["config"]["generator"] == "test-straight"
    text = http.get("/metrics")
    assert text.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert "vectorworld_sessions 1\n" in text.text
    assert "vectorworld_steps_total 1\n" in text.text
    assert 'vectorworld_step_latency_seconds_bucket{le="0.005"} 1' in text.text
    assert 'vectorworld_errors_total{code="NOT_FOUND"} 1' in text.text
    assert http.get("/openapi.json").json()["info"]["title"].startswith("VectorWorld")
    manager.drain()
    assert http.get("/readyz").status_code == 503


def test_not_ready_answers_503() -> None:
    http, _, _ = make_app(ready=False)
    assert http.get("/readyz").status_code == 503
    assert http.get("/healthz").status_code == 200


def test_token_protects_sessions_and_metrics_not_probes() -> None:
    http, _, _ = make_app(token="tok")
    assert http.get("/healthz").status_code == 200 and http.get("/readyz").status_code == 200
    for path in ("/sessions", "/metrics"):
        assert http.get(path).status_code == 401
        assert http.get(path, headers={"Authorization": "Bearer nope"}).status_code == 401
        assert http.get(path, headers={"Authorization": "Bearer tok"}).status_code == 200


def test_side_app_on_its_own_port_counts_grpc_steps() -> None:
    srv = create_server(server_config(http_port=0))
    try:
        from sim_server.client import SimClient

        with SimClient(f"127.0.0.1:{srv.port}") as c:
            session = c.create_session(seed=0)
            session.step()
            session.step()
        base = f"http://127.0.0.1:{srv.http_port}"
        assert httpx.get(f"{base}/readyz", timeout=10).status_code == 200
        metrics = httpx.get(f"{base}/metrics", timeout=10).text
        assert "vectorworld_steps_total 2\n" in metrics
        assert 'vectorworld_rpcs_total{method="Step",code="OK"} 2' in metrics
        assert httpx.get(f"{base}/sessions", timeout=10).json()["sessions"][0]["step"] == 2
    finally:
        srv.stop(grace_s=1.0)
