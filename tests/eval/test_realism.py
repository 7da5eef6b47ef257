"""``eval realism``: features on maps whose answers are known, the distances, and the command end to end."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from vectorworld.cli import app
from vectorworld.eval.generator_metrics import js_divergence
from vectorworld.eval.realism import FEATURES, compare, jsd_floor, wasserstein_1
from vectorworld.eval.realism_features import Samples, Snapshot, lane_samples, min_turn_radius, tile_samples
from vectorworld.eval.realism_sources import SampleSet, keep_lanes, reference_samples, world_junction_spacing
from vectorworld.scene import AgentType, Lane, LaneGraph

WOMD = Path(__file__).resolve().parents[2] / "../shared/data/womd/motion_data_one_scenario.tfrecord"


def crossroads(block_m: float = 100.0) -> LaneGraph:
    """Two two-lane one-way roads crossing at right angles at x = 0 and x = block_m (junction lanes
    1 m long where they cross), joined by 1-lane pieces: spacing between the junctions is known."""
    graph = LaneGraph()
    lanes = []
    next_id = iter(range(1000))
    # east-bound road, 2 lanes (y = 0 and y = 3.5), cut at the junctions
    for y in (0.0, 3.5):
        xs = [-50.0, -5.0, 5.0, block_m - 5.0, block_m + 5.0, block_m + 50.0]
        ids = [next(next_id) for _ in range(len(xs) - 1)]
        for k, i in enumerate(ids):
            lanes.append(Lane(i, np.array([[xs[k], y], [xs[k + 1], y]]),
                              successors=(ids[k + 1],) if k + 1 < len(ids) else (),
                              predecessors=(ids[k - 1],) if k > 0 else ()))
    # north-bound crossing roads at x = 0 and x = block_m (one lane each, crossing both east lanes)
    for x in (0.0, block_m):
        lanes.append(Lane(next(next_id), np.array([[x + 1.75, -40.0], [x + 1.75, 40.0]])))
    graph.add(lanes)
    return graph


def test_lane_features_of_a_known_map() -> None:
    graph = crossroads(100.0)
    s = lane_samples(graph, set(graph.lanes))
    angles = s.array("crossing_angle_deg")
    assert len(angles) == 4 and np.allclose(angles, 90.0)
    # chains between the junction lanes: 90 m (between x = 5 and x = 95) on both east lanes
    assert sorted(s.array("junction_spacing_m").round(6).tolist()) == [90.0, 90.0]
    # the east lanes have a neighbour 3.5 m beside (lane width) and count 2 lanes per direction
    assert set(s.array("lane_width_m").round(6)) == {3.5}
    assert set(s.array("lanes_per_direction")) == {2.0}
    assert s.array("turn_radius_below_50m").sum() == 0


def test_junction_spacing_of_a_world_counts_a_road_no_single_snapshot_holds() -> None:
    """A generated world is measured over many snapshots: the road between two junctions (x = 5 .. 95, three
    lanes) is touched piece by piece, and its first lanes are retired before its last ones are generated."""
    xs = [-50.0, -5.0, 5.0, 35.0, 65.0, 95.0, 105.0, 150.0]
    road = [Lane(i, np.array([[xs[i], 0.0], [xs[i + 1], 0.0]]), successors=(i + 1,) if i + 2 < len(xs) else (),
                 predecessors=(i - 1,) if i > 0 else ()) for i in range(len(xs) - 1)]
    crossing = [Lane(10 + k, np.array([[x, -40.0], [x, 40.0]])) for k, x in enumerate((0.0, 100.0))]

    def world(ids: list[int]) -> LaneGraph:
        graph = LaneGraph()
        graph.add([road[i] for i in ids] + crossing)
        return graph

    kept: dict[int, Lane] = {}
    touched: set[int] = set()
    # the world grows east; its tiles touch the west junction first, the east one last
    for ids, seen in (([0, 1, 2, 3], {1, 2, 10}), ([2, 3, 4], {3}), ([3, 4, 5, 6], {4, 5, 11})):
        keep_lanes(world(ids), seen, kept)
        touched |= seen
    assert [round(x, 6) for x in world_junction_spacing(kept, touched)] == [90.0]


def test_turn_radius_of_an_arc() -> None:
    t = np.linspace(0.0, np.pi / 2, 60)
    lane = Lane(0, np.stack([20.0 * np.sin(t), 20.0 * (1 - np.cos(t))], -1))
    assert min_turn_radius(lane) == pytest.approx(20.0, rel=0.03)
    assert min_turn_radius(Lane(1, np.array([[0.0, 0.0], [30.0, 0.0]]))) == np.inf


def test_tile_features_count_agents_and_neighbours() -> None:
    graph = crossroads()
    xy = np.array([[0.0, 0.0], [1.5, 0.0], [10.0, 0.0], [200.0, 0.0]])
    snap = Snapshot(graph, xy, np.zeros(4), np.array([0.0, 0.0, 5.0, 0.0]), np.full(4, 4.5), np.full(4, 2.0),
                    np.array([AgentType.VEHICLE, AgentType.PEDESTRIAN, AgentType.VEHICLE, AgentType.VEHICLE], np.int8),
                    np.zeros((1, 2)), np.zeros(1))
    s = tile_samples(snap)
    assert s.array("agents_per_tile").tolist() == [3.0]  # the agent 200 m away is outside the tile
    assert s.array("pedestrians_per_tile").tolist() == [1.0]
    assert np.allclose(np.sort(s.array("nn_distance_m")), [1.5, 1.5, 8.5])
    assert s.array("vehicle_standing").tolist() == [1.0, 0.0]
    assert s.array("lanes_per_tile").tolist() == [7.0]  # 3 runs of each east lane + the crossing at x = 0


def test_distances_vanish_for_equal_samples_and_grow_with_the_gap() -> None:
    rng = np.random.default_rng(0)
    a = rng.normal(0.0, 1.0, 4000)
    assert wasserstein_1(a, a) == 0.0
    assert wasserstein_1(a, a + 3.0) == pytest.approx(3.0)

    def side(shift: float) -> SampleSet:
        samples = Samples()
        for f in FEATURES:
            samples.add(f.name, rng.uniform(f.bins[0], f.bins[-1], 500) + shift * (f.bins[-1] - f.bins[0]) / 4)
        return SampleSet("x", samples, tiles=1)

    base = side(0.0)
    same, far = compare(base, base)["features"], compare(side(1.0), base)["features"]
    for f in FEATURES:
        assert same[f.name]["jsd"] == pytest.approx(0.0, abs=1e-9)
        assert far[f.name]["w1"] > 0.0
        if not f.share:
            assert far[f.name]["jsd"] > 0.1


def test_the_floor_is_what_a_reference_of_that_size_from_the_same_distribution_shows() -> None:
    rng = np.random.default_rng(1)
    bins = np.linspace(-4.0, 4.0, 33)
    generated = rng.normal(0.0, 1.0, 5000)
    small, large = jsd_floor(generated, 30, bins), jsd_floor(generated, 3000, bins)
    assert small > 5 * large > 0.0
    assert jsd_floor(generated, 30, bins) == small  # seeded
    # Independent references of 30 from the same distribution measure about the floor; a shifted one does not.
    same = np.median([js_divergence(generated, rng.normal(0.0, 1.0, 30), bins) for _ in range(200)])
    assert 0.8 * small < same < 1.25 * small
    assert js_divergence(generated, rng.normal(1.0, 1.0, 30), bins) > 2 * small


@pytest.mark.skipif(not WOMD.exists(), reason="shared WOMD sample missing")
def test_reference_tiles_of_the_womd_sample() -> None:
    ref = reference_samples(f"womd:{WOMD}")
    assert ref.tiles == 45  # one tile per valid vehicle at the current step
    lanes = ref.samples.array("lanes_per_tile")
    assert 10 <= np.median(lanes) <= 45
    assert 0.0 < ref.samples.array("vehicle_standing").mean() < 1.0


@pytest.mark.skipif(not WOMD.exists(), reason="shared WOMD sample missing")
def test_cli_json_and_png(tmp_path: Path) -> None:
    png = tmp_path / "birdseye.png"
    result = CliRunner().invoke(app, ["eval", "realism", "--reference", f"womd:{WOMD}", "--worlds", "1",
                                      "--seconds", "12", "--every", "4", "--json", "--png", str(png)])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert set(report["features"]) == {f.name for f in FEATURES}
    assert report["generated_tiles"] > 0 and report["reference_tiles"] == 45
    lanes = report["features"]["lanes_per_tile"]
    assert lanes["jsd"] is not None and 0.0 < lanes["jsd_floor"] < 0.5
    assert png.stat().st_size > 10_000


def test_cli_bad_reference_is_exit_code_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["eval", "realism", "--reference", str(tmp_path / "nothing.tfrecord")])
    assert result.exit_code == 2
    assert "nothing.tfrecord" in result.output


def test_drive_config_errors_name_fields_and_the_cli_words_them_as_flags() -> None:
    from vectorworld.errors import ConfigError
    from vectorworld.eval.realism_sources import DriveConfig

    for config, field in ((DriveConfig(worlds=0), "worlds"), (DriveConfig(every_s=0.0), "seconds")):
        with pytest.raises(ConfigError) as err:
            config.validate()
        assert err.value.field == field and "--" not in str(err.value)
    result = CliRunner().invoke(app, ["eval", "realism", "--seconds", "0"])
    assert result.exit_code == 2 and "--seconds and --every must be positive" in result.output, result.output
