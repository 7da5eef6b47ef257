"""``vectorworld serve``: run the gRPC simulator service and its HTTP side app until SIGTERM / Ctrl-C."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import typer

from policies import DEFAULT_NPC_POLICY
from vectorworld.cli.groups import bad_input, fail
from vectorworld.errors import VectorWorldError


def register(app: typer.Typer) -> None:
    @app.command()
    def serve(
        port: int = typer.Option(50051, "--port", help="gRPC port (0 = any free port)."),
        http_port: int = typer.Option(8080, "--http-port",
                                      help="Port of the HTTP side app (/healthz /readyz /sessions /metrics); "
                                           "-1 disables it."),
        host: str = typer.Option("127.0.0.1", "--host",
                                 help="Interface to bind. The default is loopback only; use 0.0.0.0 to "
                                      "accept other machines (then set --token and TLS)."),
        token: str | None = typer.Option(None, "--token", envvar="VECTORWORLD_TOKEN",
                                         help="Require 'authorization: Bearer <token>' on every call."),
        tls_cert: Path | None = typer.Option(None, "--tls-cert", help="PEM certificate chain (enables TLS)."),
        tls_key: Path | None = typer.Option(None, "--tls-key", help="PEM private key (with --tls-cert)."),
        max_sessions: int = typer.Option(64, "--max-sessions", help="Live-session cap."),
        idle_timeout: float = typer.Option(600.0, "--idle-timeout",
                                           help="Close sessions idle for this many seconds."),
        grace: float = typer.Option(10.0, "--grace", help="Seconds in-flight calls get at shutdown."),
        generator: str = typer.Option("procedural", "--generator", help="Default tile generator."),
        npc: str = typer.Option(DEFAULT_NPC_POLICY, "--npc", help="Default NPC policy."),
        scenario_dir: Path | None = typer.Option(None, "--scenario-dir",
                                                 help="Directory of logs clients may start scenarios from."),
    ) -> None:
        """Serve vectorworld.v1.SimulatorService over gRPC (health checking and reflection on)."""
        try:
            import grpc  # noqa: F401
        except ImportError as err:
            raise fail("the server needs the 'serve' extra: pip install 'vectorworld[serve]'") from err
        from sim_server.config import ServerConfig
        from sim_server.server import serve as run_server
        from vectorworld.sim.config import SessionConfig

        if host not in ("127.0.0.1", "localhost", "::1") and token is None:
            typer.echo(f"warning: binding {host} without --token: anyone who reaches the port can run "
                       f"sessions", err=True)
        try:
            config = ServerConfig(host=host, port=port, http_port=None if http_port < 0 else http_port,
                                  token=token, tls_cert=tls_cert, tls_key=tls_key, max_sessions=max_sessions,
                                  idle_timeout_s=idle_timeout, grace_s=grace, scenario_dir=scenario_dir,
                                  session_defaults=SessionConfig(generator=generator, npc_policy=npc)
                                  ).validate()
        except VectorWorldError as err:
            raise bad_input(err) from err
        logging.basicConfig(level=os.environ.get("VECTORWORLD_LOG", "INFO"),
                            format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        typer.echo(f"vectorworld serve: gRPC {host}:{port}"
                   + (f", HTTP {host}:{http_port}" if http_port >= 0 else "")
                   + (", token required" if token else "") + (", TLS" if tls_cert else ""), err=True)
        try:
            run_server(config)
        except OSError as err:
            raise fail(f"cannot start the server: {err}", 1) from err
