"""The batched DeltaSim observation equals a plain per-agent computation."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from policies.base import PolicyInput
from policies.deltasim.lane_chunks import chunk_lane
from policies.deltasim.observation import ObservationBuilder, ObservationConfig
from policies.deltasim.routes import ROUTE_AHEAD_M
from policies.deltasim.scenes import synthetic_input
from policies.idm import IdmParams, PathProfile
from vectorworld import geometry
from vectorworld.scene import AgentType

WOMD = Path(__file__).resolve().parents[2] / "../shared/data/womd/motion_data_one_scenario.tfrecord"


def _local(p: np.ndarray, xy: np.ndarray, yaw: float) -> np.ndarray:
    return geometry.to_local(p, xy, yaw)


def _one_hot(t: int) -> list[float]:
    return [float(t == AgentType.VEHICLE), float(t == AgentType.PEDESTRIAN), float(t == AgentType.CYCLIST)]


def reference(inp: PolicyInput, slot: int, cfg: ObservationConfig) -> dict[str, np.ndarray]:
    """One agent's observation, computed the slow and obvious way."""
    a = inp.agents
    xy, yaw = a.xy[slot], float(a.yaw[slot])
    hist = np.zeros((cfg.history_steps, 6))
    for k in range(cfg.history_steps):
        h = a.history[slot, -cfg.history_steps + k]
        if a.history_valid[slot, -cfg.history_steps + k]:
            p = _local(h[:2], xy, yaw)
            hist[k] = [p[0], p[1], np.cos(h[2] - yaw), np.sin(h[2] - yaw), h[3], 1.0]
    # Lane chunks: (centre distance, index) for a 3L pre-selection, then the closest point.
    chunks, owner = [], []
    for lane_id in sorted(inp.graph.lanes):
        for c in chunk_lane(inp.graph[lane_id].points, cfg.chunk_length_m, cfg.chunk_points):
            chunks.append(c)
            owner.append(lane_id)
    centre = [float(np.linalg.norm(c.mean(0) - xy)) for c in chunks]
    cand = sorted(range(len(chunks)), key=lambda m: centre[m])[:3 * cfg.max_lane_chunks]
    scored = sorted((float(np.linalg.norm(chunks[m] - xy, axis=1).min()), m) for m in cand)
    scored = [s for s in scored if s[0] <= cfg.lane_radius_m][:cfg.max_lane_chunks]
    route = list(inp.routes.get(int(a.id[slot]), ()))
    current = route[0] if route and route[0] in inp.graph else None
    if current is None:
        best = None
        for m in cand:
            pts = chunks[m]
            seg = np.diff(pts, axis=0)
            head = np.arctan2(seg[:, 1], seg[:, 0])
            head = np.append(head, head[-1])
            cost = np.linalg.norm(pts - xy, axis=1) + 4 * np.abs(geometry.wrap_angle(head - yaw))
            if best is None or cost.min() < best[0]:
                best = (cost.min(), owner[m])
        current = best[1]
    cur = inp.graph[current]
    lane_pts = np.zeros((cfg.max_lane_chunks, cfg.chunk_points, 2))
    lane_feat = np.zeros((cfg.max_lane_chunks, 10))
    for k, (_, m) in enumerate(scored):
        lid = owner[m]
        rel = 5
        for code, group in ((1, cur.successors), (2, cur.predecessors), (3, cur.left_neighbors),
                            (4, cur.right_neighbors)):
            if lid in group:
                rel = code
        if lid == current:
            rel = 0
        pos = route.index(lid) / max(len(route) - 1, 1) if lid in route else -1.0
        lane = inp.graph[lid]
        lane_pts[k] = _local(chunks[m], xy, yaw)
        lane_feat[k] = [*np.eye(6)[rel], float(pos >= 0), max(pos, 0.0), lane.speed_limit_mps / 30.0,
                        lane.width_m / 4.0]
    # Route targets: d metres along the joined route lanes from the agent's projection onto them, with the
    # lowest IDM speed cap since the previous target.
    route = np.zeros((len(ROUTE_AHEAD_M), 4))
    lanes = [i for i in inp.routes.get(int(a.id[slot]), ()) if i in inp.graph]
    if lanes:
        profile = PathProfile.build(inp.graph, tuple(lanes), IdmParams())
        path = profile.path
        s_now, _, _ = geometry.project_to_polyline(xy[None], path.points)
        previous = s_now[0]
        for k, d in enumerate(ROUTE_AHEAD_M):
            target = s_now[0] + d
            if target <= path.length_m + 1e-6:
                p = geometry.interpolate_polyline(path.points, path.s, np.array([target]))[0]
                stretch = profile.cap[(path.s > previous) & (path.s <= target)]
                cap = min([float(np.interp(target, path.s, profile.cap)), *stretch.tolist()])
                route[k] = [*_local(p, xy, yaw), 1.0, cap]
            previous = target
    # Neighbours: agents ahead in the route corridor (among the 32 nearest, within 60 m) first, then the
    # others within the radius; nearest first within each group.
    route_pts = [route[k, :2] for k in range(len(ROUTE_AHEAD_M))]
    route_ok = route[:, 2] > 0.5

    def lateral(p: np.ndarray) -> float:
        best = np.inf
        for k in range(len(route_pts) - 1):
            if route_ok[k] and route_ok[k + 1]:
                seg = route_pts[k + 1] - route_pts[k]
                t = np.clip(np.dot(p - route_pts[k], seg) / max(np.dot(seg, seg), 1e-12), 0.0, 1.0)
                best = min(best, float(np.linalg.norm(p - route_pts[k] - t * seg)))
        return best

    others = sorted((float(np.linalg.norm(a.xy[j] - xy)), j) for j in range(a.capacity) if a.valid[j] and j != slot)
    keys = []
    for rank, (d, j) in enumerate(others):
        p = _local(a.xy[j], xy, yaw)
        corridor = (rank < 32 and d <= cfg.corridor_range_m and p[0] > 0.0
                    and lateral(p) < (a.width[slot] + a.width[j]) / 2 + 0.5)
        keys.append((d - 1e4 if corridor else (d if d <= cfg.neighbor_radius_m else np.inf), j))
    nbr = np.zeros((cfg.max_neighbors, 11))
    for k, (_key, j) in enumerate([kj for kj in sorted(keys) if np.isfinite(kj[0])][:cfg.max_neighbors]):
        p = _local(a.xy[j], xy, yaw)
        v = _local(a.xy[j] + a.velocity[j], xy, yaw) - _local(a.xy[j], xy, yaw)
        dy = a.yaw[j] - yaw
        nbr[k] = [p[0], p[1], np.cos(dy), np.sin(dy), v[0], v[1], a.length[j], a.width[j],
                  *_one_hot(int(a.agent_type[j]))]
    return {"history": hist, "neighbors": nbr, "lane_points": lane_pts, "lane_features": lane_feat,
            "route_ahead": route,
            "static": np.array([a.length[slot], a.width[slot], *_one_hot(int(a.agent_type[slot]))])}
    # (the signal features that follow these in ``static`` are checked in test_deltasim_signal_features.py)


def _check(inp: PolicyInput, cfg: ObservationConfig) -> None:
    obs = ObservationBuilder(cfg)(inp)
    assert obs.size == int((inp.controlled & inp.agents.valid).sum()) > 0
    for row, slot in enumerate(obs.slots):
        ref = reference(inp, int(slot), cfg)
        for name, value in ref.items():
            got = getattr(obs, name)[row][..., : value.shape[-1]]
            np.testing.assert_allclose(got, value, atol=2e-4, err_msg=f"{name} slot {slot}")


def test_batched_observation_matches_per_agent_on_synthetic_road() -> None:
    inp = synthetic_input(24, np.random.default_rng(0), num_lanes=3, capacity=40)
    # Agents without a route fall back to the nearest lane; a free slot stays unobserved.
    routes = dict(inp.routes)
    del routes[5]
    _check(dataclasses.replace(inp, routes=routes), ObservationConfig())


def test_batched_observation_with_partial_history_and_small_capacities() -> None:
    inp = synthetic_input(12, np.random.default_rng(1), num_lanes=2)
    inp.agents.history_valid[3, :6] = False  # a freshly spawned agent
    _check(inp, ObservationConfig(max_neighbors=3, max_lane_chunks=5, neighbor_radius_m=15.0))


def test_lane_cache_follows_graph_changes() -> None:
    inp = synthetic_input(4, np.random.default_rng(2), num_lanes=1)
    builder = ObservationBuilder()
    before = builder(inp).lane_mask.sum()
    inp.graph.remove([1, 2, 3])
    after = builder(inp)
    assert after.lane_mask.sum() < before
    _check(inp, ObservationConfig())


@pytest.mark.skipif(not WOMD.is_file(), reason="WOMD sample not available")
def test_batched_observation_matches_per_agent_on_womd() -> None:
    from vectorworld.data.womd import read_womd

    scenario = read_womd(WOMD)
    agents = scenario.agents_at()
    controlled = agents.valid.copy()
    controlled[::3] = False
    inp = PolicyInput(agents=agents, controlled=controlled, graph=scenario.map.lanes, routes={},
                      ego_slot=0, step=0)
    _check(inp, ObservationConfig())


def test_the_leader_ahead_on_the_route_is_observed_before_nearer_agents() -> None:
    """A queue 50 m ahead in the agent's lane is beyond the neighbour radius and behind eight nearer agents
    in another lane; it is still the first neighbour (the route corridor ranks first)."""
    inp = synthetic_input(10, np.random.default_rng(0), num_lanes=3, curvature=0.0, segments=4)
    a = inp.agents
    xy = a.xy.copy()
    xy[1] = [20.0, -3.5]                     # on lane 0 (y = -3.5), heading +x
    xy[2] = [70.0, -3.5]                     # its leader, 50 m ahead
    xy[3:11] = np.stack([np.linspace(10.0, 30.0, 8), np.full(8, 3.5)], -1)   # lane 2, beside
    xy[0] = [-60.0, 0.0]                     # the ego, far behind
    yaw = np.zeros_like(a.yaw)
    agents = a.with_state(xy, yaw, a.speed)
    routes = dict(inp.routes)
    routes[int(a.id[1])] = (0, 1, 2, 3)      # lane 0's segments
    obs = ObservationBuilder()(dataclasses.replace(inp, agents=agents, routes=routes), np.array([1]))
    assert obs.neighbor_slots[0, 0] == 2 and np.allclose(obs.neighbors[0, 0, :2], [50.0, 0.0], atol=1e-6)
    assert set(obs.neighbor_slots[0, 1:].tolist()) <= set(range(3, 11))


def test_relation_lookup_matches_the_plain_edge_scan() -> None:
    """The relation codes looked up by lane pair equal those of a plain scan over every edge (later edges of a
    repeated pair overwriting earlier ones, the current lane last), including agents without a current lane."""
    from policies.deltasim.lane_chunks import ChunkTables, PackedLanes
    from policies.deltasim.observation import type_one_hot

    rng = np.random.default_rng(3)
    num_lanes, num_edges = 12, 40
    src, dst = rng.integers(0, num_lanes, num_edges), rng.integers(0, num_lanes, num_edges)
    kind = rng.integers(0, 4, num_edges)
    packed = PackedLanes(np.arange(num_lanes), np.ones(num_lanes), np.ones(num_lanes), np.zeros((0, 9, 2)),
                         np.zeros((0, 2)), np.zeros(0, np.int64), src, dst, kind)
    current = np.concatenate([rng.integers(-1, num_lanes, 30), [-1, num_lanes - 1, 0]])
    lanes = rng.integers(0, num_lanes, (len(current), 7))
    lanes[:, 0] = np.maximum(current, 0)
    want = np.full((len(current), num_lanes), 5)
    for row, cur in enumerate(current):
        for e in range(num_edges):
            if src[e] == cur:
                want[row, dst[e]] = kind[e] + 1
        if cur >= 0:
            want[row, cur] = 0
    got = ChunkTables.build(packed).relation(current, lanes)
    np.testing.assert_array_equal(got, np.take_along_axis(want, lanes, 1))
    types = np.array([[0, 1, 2], [3, 4, 7]])
    np.testing.assert_array_equal(type_one_hot(types), [[_one_hot(t) for t in row] for row in types])
