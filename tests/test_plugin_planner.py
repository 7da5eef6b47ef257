"""Plug-in planners as the README describes them: a no-argument constructor and ``plan``; ``reset`` optional."""

from __future__ import annotations

from typer.testing import CliRunner

import tests.straight_world  # noqa: F401 - registers "test-straight"
from policies.base import PolicyInput
from vectorworld.cli import app
from vectorworld.vehicle.commands import ControlCommand, EgoCommand


class NoReset:
    """Constructor + plan only (no reset): gentle throttle, straight ahead."""

    def plan(self, inp: PolicyInput) -> EgoCommand:
        return ControlCommand(0.5, 0.0)


class NoPlan:
    def reset(self) -> None:
        pass


def test_a_planner_without_reset_drives() -> None:
    result = CliRunner().invoke(app, ["rollout", "--km", "0.05", "--generator", "test-straight", "--npc", "idm",
                                      "--planner", "tests.test_plugin_planner:NoReset"])
    assert result.exit_code == 0, result.output


def test_a_planner_without_plan_is_one_clear_error() -> None:
    result = CliRunner().invoke(app, ["rollout", "--km", "0.05", "--generator", "test-straight",
                                      "--planner", "tests.test_plugin_planner:NoPlan"])
    assert result.exit_code == 2
    assert "has no plan(inp) method" in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_rollout_with_a_negative_seed_is_one_line_exit_2() -> None:
    result = CliRunner().invoke(app, ["rollout", "--seed", "-1", "--km", "0.05", "--generator", "test-straight"])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [result.output.strip()] and "--seed" in result.output
