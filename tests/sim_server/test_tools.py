"""The tools built on the client: the example external planner and the load test, at tiny sizes."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import tests.straight_world  # noqa: F401 - registers the "test-straight" generator

ROOT = Path(__file__).resolve().parents[2]


def _tool(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_example_planner_client_completes_a_short_drive(capsys) -> None:  # noqa: ANN001
    tool = _tool("example_planner_client")
    assert tool.main(["--generator", "test-straight", "--km", "0.1"]) == 0
    assert "goal_reached" in capsys.readouterr().out
    assert tool.main(["--generator", "test-straight", "--km", "0.05", "--stream"]) == 0
    assert tool.main(["--generator", "test-straight", "--km", "0.05", "--plain-encoding"]) == 0


def test_example_client_runs_the_pdm_planner_client_side(capsys) -> None:  # noqa: ANN001
    tool = _tool("example_planner_client")
    assert tool.main(["--generator", "test-straight", "--km", "0.1", "--planner", "pdm"]) == 0
    out = capsys.readouterr().out
    assert "goal_reached" in out and "CLS" in out


def test_load_test_runs_small(tmp_path: Path) -> None:
    tool = _tool("load_test")
    out = tmp_path / "load.json"
    assert tool.main(["--sessions", "2", "--steps", "5", "--churn", "8", "--overhead-steps", "6",
                      "--generator", "test-straight", "--out", str(out)]) == 0
    import json

    figures = json.loads(out.read_text())
    assert figures["load"]["steps"] == 10 and figures["load"]["errors"] == []
    assert figures["load"]["live_sessions_after"] == 0 and figures["churn"]["live_sessions_after"] == 0
    assert figures["churn"]["sessions"] == 8
    for rpc in ("stream", "unary"):  # every measured step paired with the server's engine time of that step
        run = figures["overhead"][rpc]
        assert run["steps"] == 3 and run["paired"] == 3
        assert 0 < run["engine_ms_p50"] < run["client_ms_p50"]
        assert run["handler_ms_p50"] >= run["engine_ms_p50"]
    # the bare-gRPC floor ran after the stream run, spinning for its engine time; the stream is compared to it
    floor = figures["overhead"]["floor"]
    assert floor["steps"] == 3 and floor["reply_bytes"] == 24_000
    assert floor["spin_ms_p50"] > 0  # (its length follows the stream's engine time; timing is not asserted)
    assert 0 < floor["request_ms_p50"] < floor["client_ms_p50"]
    assert 0 < floor["response_ms_p50"] < floor["client_ms_p50"]
    stream = figures["overhead"]["stream"]
    assert stream["above_floor_ms_p50"] == stream["overhead_ms_p50"] - floor["overhead_ms_p50"]
    assert "above_floor_ms_p50" not in figures["overhead"]["unary"]


def test_load_test_compares_encodings(tmp_path: Path) -> None:
    tool = _tool("load_test")
    out = tmp_path / "compare.json"
    assert tool.main(["--compare", "--skip-load", "--overhead-steps", "4", "--generator", "test-straight",
                      "--floor-bytes", "0", "--out", str(out)]) == 0
    import json

    figures = json.loads(out.read_text())
    assert "load" not in figures and "floor" not in figures["overhead"]  # --floor-bytes 0: no floor run
    for rpc in ("stream", "unary"):
        plain = figures["overhead"][f"{rpc}/full+messages+full"]
        compact = figures["overhead"][f"{rpc}/delta+table+full"]
        assert (plain["lane_delivery"], plain["agent_layout"], plain["history_delivery"]) == \
            ("full", "messages", "full")
        assert (compact["lane_delivery"], compact["agent_layout"], compact["history_delivery"]) == \
            ("delta", "table", "full")
        assert plain["paired"] == compact["paired"] == 2
        assert 0 < compact["reply_bytes_p50"] < plain["reply_bytes_p50"]


def test_load_test_compares_history_delivery(tmp_path: Path) -> None:
    tool = _tool("load_test")
    out = tmp_path / "history.json"
    assert tool.main(["--compare-history", "--skip-load", "--overhead-steps", "14", "--generator", "test-straight",
                      "--floor-bytes", "0", "--out", str(out)]) == 0
    import json

    figures = json.loads(out.read_text())["overhead"]
    assert set(figures) == {f"{rpc}/delta+table+{h}" for rpc in ("stream", "unary") for h in ("full", "delta")}
    full, delta = figures["stream/delta+table+full"], figures["stream/delta+table+delta"]
    assert full["history_delivery"] == "full" and delta["history_delivery"] == "delta"
    assert full["paired"] == delta["paired"] == 7  # 14 steps, the first 7 left out (warm-up)
    # the same episode; the ego (in view at every step) alone sends 10 history entries (4 doubles each) less
    assert delta["reply_bytes_mean"] <= full["reply_bytes_mean"] - 10 * 32


def test_load_test_fault_and_idle_phases_run_small(tmp_path: Path) -> None:
    tool = _tool("load_test")
    out = tmp_path / "faults.json"
    assert tool.main(["--skip-overhead", "--skip-load", "--faults", "--fault-streams", "4", "--fault-active", "2",
                      "--fault-vanish", "1", "--steps", "60", "--idle-streams", "4", "--generator", "test-straight",
                      "--out", str(out)]) == 0
    import json

    figures = json.loads(out.read_text())
    faults, idle = figures["faults"], figures["idle"]
    assert faults["errors"] == [] and faults["live_sessions_after"] == 0
    assert faults["restart"]["recovered"] == 4 and faults["restart"]["lost"] == 0  # every session rebuilt
    assert faults["restart"]["at_step_median"] < 60  # the kill -9 landed mid-run
    assert faults["exactly_steps"] == 2  # each active session ended at exactly 60 steps across it
    assert faults["vanished"] == faults["vanished_exactly_once"] == 1
    assert faults["idle_spoke_after_restart"] == faults["idle_opened"] == 2
    assert faults["paired"] > 0 and faults["checks"] > 0  # (health latency and failures: measured, not asserted)
    assert faults["health_busy_ms_max"] <= faults["health_ms_max"]  # the checks while active: a subset
    assert idle["new_session_served"] and idle["idle_opened"] == 4 and idle["errors"] == []


def test_the_client_side_planner_sees_the_lights_and_the_crosswalks_in_use() -> None:
    """A served observation's lights and occupied crosswalks reach the planner as the session's own would."""
    import dataclasses

    from vectorworld.sim.config import SessionConfig
    from vectorworld.sim.session import Session

    session = Session(SessionConfig(seed=1, npc_policy="idm", target_km=1.0))
    session.reset()
    obs = session.observe()
    walk = obs.crosswalks[0]
    obs = dataclasses.replace(obs, occupied_crosswalks=frozenset({walk.id}))
    planner = _tool("example_planner_client").ObservationPlanner("idm")
    seen = []
    planner.planner.plan = lambda inp: seen.append(inp)
    planner(obs)
    assert seen[0].crossing_blocked == frozenset(walk.conflicts)
    assert seen[0].signals is obs.signals and len(obs.signals) > 0
