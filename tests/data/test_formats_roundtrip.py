"""tf.Example, GPUDrive JSON and ScenarioNet: the real WOMD sample, written by our writers, reads back as the
WOMD reader's Scenario (lanes, edges, agents, histories; more where the format carries more)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vectorworld import geometry
from vectorworld.data.assemble import EDGE_GAP_M, IdMap, infer_successors
from vectorworld.data.scenario import DEFAULT_LANE_WIDTH_M, DEFAULT_SPEED_LIMIT_MPS, Scenario
from vectorworld.data.sources import load_scenario
from vectorworld.data.womd_export import track_arrays

FLOAT32_M = 1e-3  # coordinates stored as float32 (tf.Example, ScenarioNet): ~0.5 mm at 8 km from the origin
FORMATS = ("womd-example", "gpudrive", "scenarionet")


def _edges(s: Scenario, attr: str) -> set[tuple[int, int]]:
    return {(i, j) for i, lane in s.map.lanes.lanes.items() for j in getattr(lane, attr)}


def assert_same_core(a: Scenario, b: Scenario, tol: float) -> None:
    """What every format carries: ids, steps, SDC, tracks and histories, lanes with types and successor
    edges, road lines and edges, crosswalks, stop-sign positions, signals."""
    assert (b.scenario_id, b.num_steps, b.current_index, b.sdc_index) == \
        (a.scenario_id, a.num_steps, a.current_index, a.sdc_index)
    assert sorted(b.predict_indices.tolist()) == sorted(a.predict_indices.tolist())
    ta, tb = a.tracks, b.tracks
    assert (tb.ids == ta.ids).all() and (tb.types == ta.types).all() and (tb.valid == ta.valid).all()
    assert np.abs(tb.xy - ta.xy).max() < tol and np.abs(tb.velocity - ta.velocity).max() < tol
    assert np.abs(geometry.wrap_angle(tb.yaw - ta.yaw)).max() < 1e-5
    ha, hb = a.agents_at(), b.agents_at()
    assert (hb.id == ha.id).all() and (hb.history_valid == ha.history_valid).all()
    assert np.abs(hb.history[..., :2] - ha.history[..., :2]).max() < tol
    assert np.abs(hb.history[..., 3] - ha.history[..., 3]).max() < 1e-3  # speed
    assert np.abs(geometry.wrap_angle(hb.history[..., 2] - ha.history[..., 2])).max() < 1e-5
    la, lb = a.map.lanes.lanes, b.map.lanes.lanes
    assert set(lb) == set(la) and len(la) == 199
    assert max(np.abs(lb[i].points - la[i].points).max() for i in la) < tol
    assert all(lb[i].lane_type == la[i].lane_type for i in la)
    assert _edges(b, "successors") == _edges(a, "successors") and len(_edges(a, "successors")) == 193
    assert _edges(b, "predecessors") == _edges(a, "predecessors")
    for layer in ("road_lines", "road_edges", "crosswalks", "speed_bumps"):
        pa, pb = getattr(a.map, layer), getattr(b.map, layer)
        assert (pb.ids == pa.ids).all() and (pb.types == pa.types).all() and (pb.offsets == pa.offsets).all()
        assert np.abs(pb.points - pa.points).max() < tol
    assert (b.map.stop_signs.ids == a.map.stop_signs.ids).all()
    assert np.abs(b.map.stop_signs.xy - a.map.stop_signs.xy).max() < tol
    sa, sb = a.signals, b.signals
    assert (sb.valid == sa.valid).all() and (sb.lane_ids == sa.lane_ids).all() and (sb.states == sa.states).all()
    assert np.nanmax(np.abs(sb.stop_xy - sa.stop_xy)) < tol and sa.valid.sum() == 12 * 91


def test_scenarionet_carries_everything(format_files, womd_scenario) -> None:
    b = load_scenario(f"scenarionet:{format_files['scenarionet']}")
    a = womd_scenario
    assert b.source.dataset == "scenarionet"
    assert_same_core(a, b, FLOAT32_M)
    for attr in ("left_neighbors", "right_neighbors"):
        assert _edges(b, attr) == _edges(a, attr) and len(_edges(a, attr)) == 191
    la, lb = a.map.lanes.lanes, b.map.lanes.lanes
    assert max(abs(lb[i].width_m - la[i].width_m) for i in la) < 0.01  # same estimator, float32 inputs
    assert all(lb[i].speed_limit_mps == pytest.approx(la[i].speed_limit_mps) for i in la)
    assert np.abs(b.tracks.length - a.tracks.length).max() < 1e-5
    assert b.map.stop_signs.lane_ids == a.map.stop_signs.lane_ids
    assert np.abs(b.timestamps_s - a.timestamps_s).max() < 1e-6


def test_womd_example_reads_back_the_womd_scenario(format_files, womd_scenario) -> None:
    b = load_scenario(f"womd-example:{format_files['womd-example']}#0")
    a = womd_scenario
    assert b.source.dataset == "womd-example" and b.metadata["inferred"] == ["successors"]
    assert_same_core(a, b, FLOAT32_M)
    assert np.abs(b.tracks.length - a.tracks.length).max() < 1e-5  # per-step boxes, float32
    assert np.abs(b.timestamps_s - a.timestamps_s).max() < 1e-6
    # What the format does not carry takes the documented defaults.
    lanes = b.map.lanes.lanes.values()
    assert not _edges(b, "left_neighbors") and all(lane.width_m == DEFAULT_LANE_WIDTH_M for lane in lanes)
    assert all(lane.speed_limit_mps == DEFAULT_SPEED_LIMIT_MPS for lane in lanes)
    assert load_scenario(f"womd-example:{format_files['womd-example']}#{a.scenario_id}").scenario_id == a.scenario_id


def test_gpudrive_reads_back_the_womd_scenario(format_files, womd_scenario, womd_message) -> None:
    b = load_scenario(f"gpudrive:{format_files['gpudrive']}")
    a = womd_scenario
    assert b.source.dataset == "gpudrive"
    assert_same_core(a, b, 1e-9)  # JSON keeps doubles
    # The box is the last valid one (GPUDrive stores one per object).
    arrays = track_arrays(womd_message)
    last = [int(np.nonzero(v)[0][-1]) for v in arrays.valid]
    assert np.allclose(b.tracks.length, arrays.field("length")[np.arange(len(last)), last])
    assert np.allclose(b.timestamps_s, np.arange(91) * 0.1)  # no timestamps in the file: 10 Hz
    assert all(lane.width_m == DEFAULT_LANE_WIDTH_M for lane in b.map.lanes.lanes.values())


def test_inferred_successors_on_synthetic_lanes() -> None:
    straight = np.array([[0.0, 0.0], [10.0, 0.0]])
    lanes = {
        1: straight,
        2: np.array([[10.0, 0.0], [20.0, 0.0]]),                       # continues 1
        3: np.array([[10.0, 0.0], [15.0, 5.0]]),                       # forks off 1 (45 deg)
        4: np.array([[10.0 + EDGE_GAP_M + 0.3, 0.0], [20.0, 0.0]]),   # starts too far away
        5: np.array([[10.0, 0.0], [0.0, 0.2]]),                        # turns back: not a successor
        6: np.array([[10.2, 0.0], [10.2, 0.0]]),                       # point-like: direction unknown
    }
    assert sorted(infer_successors(lanes)[1]) == [2, 3, 6]
    assert infer_successors(lanes)[2] == []


def test_id_map_keeps_decimal_ids_and_numbers_the_rest() -> None:
    ids = IdMap(["17", "ego", "3", "token-a", "ego"])
    assert (ids["17"], ids["3"], ids["ego"], ids["token-a"], ids[17]) == (17, 3, 18, 19, 17)
    assert ids.named == {"ego": 18, "token-a": 19} and ids.get("missing") is None


@pytest.mark.parametrize("kind", FORMATS)
def test_plain_paths_are_detected(kind: str, format_files) -> None:
    assert load_scenario(str(format_files[kind])).source.dataset == kind


def test_scenarionet_folder_summary_mapping_and_selectors(tmp_path: Path, womd_message) -> None:
    from vectorworld.data import scenarionet
    from vectorworld.data.scenarionet_writer import write_scenarionet
    from vectorworld.data.sources import count_scenarios

    # Two scenarios, the second moved into a sub-folder that only the mapping file knows about.
    second = type(womd_message).FromString(womd_message.SerializeToString())
    second.scenario_id = "second"
    files = write_scenarionet(tmp_path, [womd_message, second])
    (tmp_path / "part").mkdir()
    files[1].rename(tmp_path / "part" / files[1].name)
    import pickle

    mapping = {files[0].name: "", files[1].name: "part"}
    (tmp_path / scenarionet.MAPPING_FILE).write_bytes(pickle.dumps(mapping))
    assert count_scenarios(f"scenarionet:{tmp_path}") == 2
    assert load_scenario(f"scenarionet:{tmp_path}#1").scenario_id == "second"
    assert load_scenario(f"scenarionet:{tmp_path}#{files[1].name}").source.index == 1
    assert load_scenario(f"scenarionet:{tmp_path}#second").scenario_id == "second"
    assert load_scenario(f"scenarionet:{tmp_path / 'part' / files[1].name}").scenario_id == "second"
