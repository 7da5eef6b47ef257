"""``vectorworld serve``: run the gRPC simulator service and its HTTP side app until SIGTERM / Ctrl-C."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import typer

from policies import DEFAULT_NPC_POLICY
from vectorworld.cli.groups import GENERATOR_FORMS, bad_input, fail
from vectorworld.errors import VectorWorldError

SERVE_FLAGS = {"host": "--host", "port": "--port", "http_port": "--http-port", "token": "--token",
               "tls_cert": "--tls-cert", "tls_key": "--tls-key", "max_sessions": "--max-sessions",
               "engine_workers": "--engine-workers", "state_dir": "--state-dir", "idle_timeout_s": "--idle-timeout",
               "grace_s": "--grace", "scenario_dir": "--scenario-dir", "snapshot_every": "--snapshot-every",
               "generator": "--generator", "npc_policy": "--npc"}
"""ServerConfig field -> the ``serve`` flag that sets it (ServerConfig.validate names fields)."""


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
        max_sessions: int = typer.Option(64, "--max-sessions",
                                         help="Live-session cap (streams waiting for a request cost no "
                                              "thread; a session holds its world in memory)."),
        engine_workers: int | None = typer.Option(None, "--engine-workers",
                                                  help="Threads that run engine steps (reset, step, observe, "
                                                       "encode); a slow step holds one of them only. Default: "
                                                       "the machine's cores, at most 4."),
        state_dir: Path | None = typer.Option(None, "--state-dir",
                                              help="Directory of session journals (sessions survive a restart "
                                                   "or kill -9). Default: $XDG_STATE_HOME/vectorworld/sessions "
                                                   "(~/.local/state/vectorworld/sessions)."),
        no_journal: bool = typer.Option(False, "--no-journal",
                                        help="Keep no journal: sessions end with the process."),
        snapshot_every: int = typer.Option(200, "--snapshot-every",
                                           help="Snapshot each journaled session every N steps, so a restart "
                                                "replays at most N steps per session (0 = never: replay all)."),
        no_gc_freeze: bool = typer.Option(False, "--no-gc-freeze",
                                          help="Let the garbage collector's full collections walk every live "
                                               "session (each stops the server ~3 ms per session); by default "
                                               "live sessions are frozen out of them."),
        idle_timeout: float = typer.Option(600.0, "--idle-timeout",
                                           help="Close sessions idle for this many seconds."),
        grace: float = typer.Option(10.0, "--grace", help="Seconds in-flight calls get at shutdown."),
        generator: str = typer.Option("procedural", "--generator", help=f"Default tile generator: {GENERATOR_FORMS} "
                                     "(clients send names; a checkpoint is the server's)."),
        npc: str = typer.Option(DEFAULT_NPC_POLICY, "--npc", help="Default NPC policy."),
        scenario_dir: Path | None = typer.Option(None, "--scenario-dir",
                                                 help="Directory of logs clients may start scenarios from."),
    ) -> None:
        """Serve vectorworld.v1.SimulatorService over gRPC (health checking and reflection on)."""
        try:
            import grpc  # noqa: F401
        except ImportError as err:
            raise fail("the server needs the 'serve' extra: pip install 'vectorworld[serve]'") from err
        from policies import make_policy
        from sim_server.config import ServerConfig, default_engine_workers, default_state_dir
        from sim_server.server import serve as run_server
        from vectorworld.generation import make_generator
        from vectorworld.sim.config import SessionConfig

        if host not in ("127.0.0.1", "localhost", "::1") and token is None:
            typer.echo(f"warning: binding {host} without --token: anyone who reaches the port can run "
                       f"sessions", err=True)
        try:
            config = ServerConfig(host=host, port=port, http_port=None if http_port < 0 else http_port,
                                  token=token, tls_cert=tls_cert, tls_key=tls_key, max_sessions=max_sessions,
                                  idle_timeout_s=idle_timeout, grace_s=grace, scenario_dir=scenario_dir,
                                  engine_workers=default_engine_workers() if engine_workers is None else engine_workers,
                                  snapshot_every=snapshot_every, gc_freeze=not no_gc_freeze,
                                  state_dir=None if no_journal else (state_dir or default_state_dir()),
                                  session_defaults=SessionConfig(generator=generator, npc_policy=npc)
                                  ).validate()
            make_generator(generator)  # a default every session would fail on is refused at start
            make_policy(npc)
        except (VectorWorldError, ValueError) as err:
            raise bad_input(err, SERVE_FLAGS) from err
        if no_journal and state_dir is not None:
            raise fail("--state-dir and --no-journal contradict each other")
        logging.basicConfig(level=os.environ.get("VECTORWORLD_LOG", "INFO"),
                            format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        typer.echo(f"vectorworld serve: gRPC {host}:{port}"
                   + (f", HTTP {host}:{http_port}" if http_port >= 0 else "")
                   + (", token required" if token else "") + (", TLS" if tls_cert else "")
                   + (f", journals in {config.state_dir}" if config.state_dir else ", no journal"), err=True)
        try:
            run_server(config)
        except (OSError, VectorWorldError) as err:  # a busy port, an unusable state directory
            raise fail(f"cannot start the server: {err}") from err
