"""FrameStore: the map at any frame (keyframes + cursor) equals applying every delta in order; trails,
events, seeking and clamping."""

import numpy as np
import pytest

from tests.viewer.synthetic_frames import NPC_ID, make_frames
from vectorworld.viewer.events import EventKind
from vectorworld.viewer.frame_store import FrameStore
from vectorworld.viewer.map_state import MapState


def sequential_maps(frames):
    state, out = MapState(), []
    for f in frames:
        state.apply(f)
        out.append((set(state.lanes), set(state.tiles)))
    return out


def test_random_seeks_match_sequential_application():
    frames = make_frames(100, tile_step=20, remove_step=70)
    store = FrameStore(frames, keyframe_every=8)
    expected = sequential_maps(frames)
    rng = np.random.default_rng(0)
    for index in list(rng.integers(0, 100, 60)) + [99, 0, 19, 20, 69, 70, 98]:
        state = store.map_at(int(index))
        assert (set(state.lanes), set(state.tiles)) == expected[index], index


def test_lane_added_and_removed_and_tile_retired():
    store = FrameStore(make_frames(100, tile_step=20, remove_step=70))
    assert set(store.map_at(19).lanes) == {1, 2}
    assert set(store.map_at(20).lanes) == {1, 2, 3} and set(store.map_at(20).tiles) == {0, 1}
    assert set(store.map_at(70).lanes) == {1, 2}
    assert set(store.map_at(70).tiles) == {0}  # tile 1 lost its only lane
    assert set(store.map_at(30).lanes) == {1, 2, 3}  # seeking back rebuilds


def test_versions_identify_content_across_paths():
    store = FrameStore(make_frames(80, remove_step=60), keyframe_every=4)
    forward = [store.map_at(i).version for i in range(80)]
    backward = [store.map_at(i).version for i in reversed(range(80))][::-1]
    assert forward == backward
    assert forward[0] < forward[20] < forward[60]


def test_seek_clamps_and_index_of_step():
    store = FrameStore(make_frames(30))
    assert store.clamp(1000) == 29 and store.clamp(-5) == 0
    assert store.index_of_step(12) == 12 and store.index_of_step(10_000) == 29
    assert set(store.map_at(1000).lanes) == set(store.map_at(29).lanes)


def test_empty_store_index_of_step_raises():
    with pytest.raises(IndexError):
        FrameStore().index_of_step(0)


def test_trails_come_from_previous_frames():
    store = FrameStore(make_frames(30))
    trails = store.trails(10, length=5)
    ego = trails[0]
    assert ego.shape == (5, 2)
    np.testing.assert_allclose(ego[:, 0], [6.0, 7.0, 8.0, 9.0, 10.0])
    np.testing.assert_allclose(trails[NPC_ID], np.tile([30.0, 4.0], (5, 1)))
    assert store.trails(0, 5) == {}  # a single point is no trail


def test_events_and_metrics_so_far():
    store = FrameStore(make_frames(60, tile_step=20, collision_step=40, offroad_step=50))
    ev = store.events
    assert ev.indices(EventKind.TILE) == [0, 20]
    assert ev.next_event(0) == 20 and ev.next_event(20) == 40 and ev.next_event(40) == 50
    assert ev.next_event(50) is None
    assert ev.previous_event(50) == 40 and ev.previous_event(0) is None
    assert EventKind.COLLISION in ev.at(40)
    assert ev.metrics_so_far(39).ego_collisions == 0 and ev.metrics_so_far(40).ego_collisions == 1
    assert ev.metrics_so_far(59).ego_offroad_steps == 1 and ev.metrics_so_far(59).tiles == 2
    assert ev.metrics_so_far(59).tile_ms_max == pytest.approx(20.0)


def test_route_defaults_to_the_ego_path_ahead():
    store = FrameStore(make_frames(30))
    route = store.route_at(10, horizon=5)
    np.testing.assert_allclose(route[:, 0], [10.0, 11.0, 12.0, 13.0, 14.0])
    store.routes[10] = np.array([[0.0, 0.0], [1.0, 1.0]])
    assert store.route_at(10).shape == (2, 2)
