"""``vectorworld serve`` registration: options exist, bad input exits 2 before binding anything."""

from __future__ import annotations

import typer
from typer.testing import CliRunner

from vectorworld.cli.serve_command import register


def make_app() -> typer.Typer:
    app = typer.Typer()
    register(app)

    @app.command()
    def noop() -> None:  # a second command keeps typer in multi-command mode
        pass

    return app


def test_help_lists_the_options() -> None:
    result = CliRunner().invoke(make_app(), ["serve", "--help"])
    assert result.exit_code == 0
    for option in ("--port", "--http-port", "--host", "--token", "--tls-cert", "--tls-key", "--max-sessions",
                   "--engine-workers", "--state-dir", "--no-journal"):
        assert option in result.output


def test_bad_input_exits_2() -> None:
    runner = CliRunner()
    result = runner.invoke(make_app(), ["serve", "--max-sessions", "0"])
    assert result.exit_code == 2 and "--max-sessions" in result.output
    result = runner.invoke(make_app(), ["serve", "--tls-cert", "/nonexistent.pem"])
    assert result.exit_code == 2 and "--tls-key" in result.output
    result = runner.invoke(make_app(), ["serve", "--port", "70000"])
    assert result.exit_code == 2
    result = runner.invoke(make_app(), ["serve", "--engine-workers", "0"])
    assert result.exit_code == 2 and "--engine-workers" in result.output
    result = runner.invoke(make_app(), ["serve", "--no-journal", "--state-dir", "/tmp/x"])
    assert result.exit_code == 2 and "--no-journal" in result.output


def test_a_busy_grpc_port_is_one_line_and_exit_2(tmp_path) -> None:  # noqa: ANN001
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = CliRunner().invoke(make_app(), ["serve", "--port", str(port), "--http-port", "-1",
                                                 "--state-dir", str(tmp_path)])
    assert result.exit_code == 2
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "in use" in errors[0] and "Traceback" not in result.output
