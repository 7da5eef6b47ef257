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
    for option in ("--port", "--http-port", "--host", "--token", "--tls-cert", "--tls-key", "--max-sessions"):
        assert option in result.output


def test_bad_input_exits_2() -> None:
    runner = CliRunner()
    result = runner.invoke(make_app(), ["serve", "--max-sessions", "0"])
    assert result.exit_code == 2 and "--max-sessions" in result.output
    result = runner.invoke(make_app(), ["serve", "--tls-cert", "/nonexistent.pem"])
    assert result.exit_code == 2 and "--tls-key" in result.output
    result = runner.invoke(make_app(), ["serve", "--port", "70000"])
    assert result.exit_code == 2
