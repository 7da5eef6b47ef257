"""``vectorworld serve`` registration: options exist, bad input exits 2 before binding anything."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from sim_server.config import ServerConfig
from vectorworld.cli.serve_command import register
from vectorworld.errors import ConfigError


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
                   "--engine-workers", "--state-dir", "--no-journal", "--snapshot-every", "--no-gc-freeze"):
        assert option in result.output


@pytest.mark.parametrize(("flags", "frozen"), [([], True), (["--no-gc-freeze"], False)])
def test_gc_freeze_reaches_the_server_config(flags: list[str], frozen: bool, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import sim_server.server

    served: list[ServerConfig] = []
    monkeypatch.setattr(sim_server.server, "serve", served.append)
    result = CliRunner().invoke(make_app(), ["serve", "--state-dir", str(tmp_path), *flags])
    assert result.exit_code == 0, result.output
    assert [config.gc_freeze for config in served] == [frozen]


def test_bad_input_exits_2() -> None:
    runner = CliRunner()
    result = runner.invoke(make_app(), ["serve", "--max-sessions", "0"])
    assert result.exit_code == 2 and "--max-sessions" in result.output
    result = runner.invoke(make_app(), ["serve", "--tls-cert", "/nonexistent.pem"])
    assert result.exit_code == 2 and "--tls-key" in result.output
    result = runner.invoke(make_app(), ["serve", "--port", "70000"])
    assert result.exit_code == 2 and "--port must be in [0, 65535]" in result.output
    result = runner.invoke(make_app(), ["serve", "--snapshot-every", "-1"])
    assert result.exit_code == 2 and "--snapshot-every must be >= 0" in result.output
    result = runner.invoke(make_app(), ["serve", "--engine-workers", "0"])
    assert result.exit_code == 2 and "--engine-workers" in result.output
    result = runner.invoke(make_app(), ["serve", "--no-journal", "--state-dir", "/tmp/x"])
    assert result.exit_code == 2 and "--no-journal" in result.output
    result = runner.invoke(make_app(), ["serve", "--generator", "learned:/nonexistent"])   # every session would fail
    assert result.exit_code == 2 and "--generator: checkpoint folder '/nonexistent' does not exist" in result.output
    result = runner.invoke(make_app(), ["serve", "--npc", "nope"])
    assert result.exit_code == 2 and "unknown NPC policy 'nope'" in result.output


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


@pytest.mark.parametrize(("changes", "field"), [
    ({"port": 70000}, "port"), ({"http_port": -2}, "http_port"), ({"max_sessions": 0}, "max_sessions"),
    ({"engine_workers": 0}, "engine_workers"), ({"snapshot_every": -1}, "snapshot_every"),
    ({"tls_cert": Path("/nonexistent.pem")}, "tls_key"),
    ({"tls_cert": Path("/nonexistent.pem"), "tls_key": Path("/nonexistent.key")}, "tls_cert"),
    ({"scenario_dir": Path("/nonexistent-dir")}, "scenario_dir"), ({"token": " "}, "token"),
    ({"grace_s": 0.0}, "grace_s"), ({"gil_switch_interval_s": 0.0}, "gil_switch_interval_s"),
])
def test_server_config_errors_name_fields_not_flags(changes: dict, field: str) -> None:
    """The library names ServerConfig fields (the CLI words them as flags: test_bad_input_exits_2)."""
    with pytest.raises(ConfigError) as info:
        ServerConfig(**changes).validate()
    assert info.value.field == field and field in str(info.value) and "--" not in str(info.value)
