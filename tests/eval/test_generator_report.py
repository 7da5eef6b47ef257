"""The generator report's planning: tile counts onto worlds, the step filter of the variants, JSON output."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import tests.straight_world  # noqa: F401  (registers "test-straight")
from vectorworld.errors import ConfigError
from vectorworld.eval.generator_metrics import grow_worlds
from vectorworld.eval.generator_report import json_ready, plan_tiles, variant_specs
from vectorworld.generation import make_generator


def test_plan_tiles_maps_a_total_onto_worlds() -> None:
    assert plan_tiles() == (10, 12)                       # 10 worlds x 11 evaluated tiles, as before
    assert plan_tiles(worlds=3, tiles_per_world=5) == (3, 5)
    assert plan_tiles(100) == (10, 11)                    # ceil(100 / 11) = 10 worlds of 10 tiles
    assert plan_tiles(3) == (1, 4)
    assert plan_tiles(25, tiles_per_world=6) == (5, 6)
    assert plan_tiles(7, worlds=2) == (2, 5)              # 4 + 3 (max_tiles cuts the last world)
    assert plan_tiles(2, worlds=5) == (2, 2)              # never more worlds than tiles
    for tiles in range(1, 60):
        worlds, per_world = plan_tiles(tiles)
        assert worlds * (per_world - 1) >= tiles and per_world <= 12
    with pytest.raises(ConfigError):
        plan_tiles(10, worlds=2, tiles_per_world=3)
    with pytest.raises(ConfigError):
        plan_tiles(0)


def test_max_tiles_caps_the_grown_tiles() -> None:
    generator = make_generator("test-straight")
    grown = grow_worlds(generator, 2, 5, seed=0, max_tiles=7)
    assert [len(r) for r in grown.records] == [4, 3]
    assert [len(r) for r in grow_worlds(generator, 2, 5, seed=0).records] == [4, 4]


def test_step_filter_of_the_variants(tmp_path: Path) -> None:
    for name in ("fm", "nogate"):
        (tmp_path / name).mkdir()
    every = variant_specs("W", tmp_path, k_steps=4)
    assert set(every) == {"meanflow_1step", "meanflow_4step", "flow_matching_1step", "flow_matching_4step",
                          "meanflow_1step_no_edge_gating", "procedural", "naive_agents_on_learned_lanes"}
    one = variant_specs("W", tmp_path, k_steps=4, steps=1)
    assert set(one) == {"meanflow_1step", "flow_matching_1step", "meanflow_1step_no_edge_gating", "procedural",
                        "naive_agents_on_learned_lanes"}
    eight = variant_specs("W", tmp_path, steps=8)
    assert {n for n, s in eight.items() if s.get("steps") is not None and s["steps"] != 8} == set()
    assert "meanflow_8step_no_edge_gating" in eight and eight["flow_matching_8step"]["sampler"] == "flow_matching"
    assert set(variant_specs("W", None, steps=2)) == {"meanflow_2step", "procedural",
                                                      "naive_agents_on_learned_lanes"}
    with pytest.raises(ConfigError):
        variant_specs("W", steps=0)


def test_json_ready_is_strict_json() -> None:
    text = json.dumps(json_ready({"a": {"x": 1.5, "y": math.nan, "z": math.inf}}), allow_nan=False)
    assert json.loads(text) == {"a": {"x": 1.5, "y": None, "z": None}}
