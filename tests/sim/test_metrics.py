"""Metric event memory: spawned agents start remembered, so spawning never counts as a policy event."""

import dataclasses

import numpy as np

from vectorworld import geometry
from vectorworld.scene import Agents, Lane
from vectorworld.sim.metrics import MetricTracker
from vectorworld.world.drivable import DrivableGrid


def agents_at(xy: list[tuple[float, float]], valid: list[bool]) -> Agents:
    a = Agents.empty(len(xy))
    arrays = {f.name: getattr(a, f.name).copy() for f in dataclasses.fields(Agents)}
    arrays["id"][:] = np.arange(len(xy))
    arrays["valid"][:] = valid
    arrays["agent_type"][:] = 1
    arrays["xy"][:] = xy
    arrays["length"][:], arrays["width"][:] = 4.6, 2.0
    return Agents(**arrays)


def road() -> DrivableGrid:
    grid = DrivableGrid()
    xs = np.linspace(-50.0, 150.0, 101)
    grid.add(Lane(1, np.stack([xs, np.zeros_like(xs)], -1)))
    return grid


def test_spawned_parked_car_off_road_and_overlap_are_not_events():
    grid, tracker = road(), MetricTracker(4, 0.1)
    before = agents_at([(-30.0, 0.0), (0.0, 0.0), (0.0, 0.0), (0.0, 0.0)], [True, False, False, False])
    tracker.prime(before, 0, grid)
    # Between two steps the world spawns a parked car off the road and two overlapping cars.
    spawned = agents_at([(-30.0, 0.0), (40.0, 8.0), (60.0, 0.0), (61.0, 0.0)], [True] * 4)
    m = tracker.step(spawned, spawned, 0, spawned.valid, grid)
    assert (m.npc_offroad_events, m.npc_collision_events) == (0, 0)
    # A car that was on the road and drives off it is an event; so is a new contact.
    moved = spawned.with_state(spawned.xy + np.array([[0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [50.0, 0.0]]),
                               spawned.yaw, spawned.speed)
    drove_off = moved.with_state(np.where(np.arange(4)[:, None] == 2, [[60.0, 9.0]] * 4, moved.xy),
                                 moved.yaw, moved.speed)
    m = tracker.step(spawned, drove_off, 0, spawned.valid, grid)
    assert m.npc_offroad_events == 1
    hit = drove_off.with_state(np.where(np.arange(4)[:, None] == 3, [[40.0, 8.5]] * 4, drove_off.xy),
                               drove_off.yaw, drove_off.speed)
    assert geometry.pairwise_box_overlap(hit.xy, hit.yaw, hit.length, hit.width, hit.valid)[1, 3]
    assert tracker.step(drove_off, hit, 0, hit.valid, grid).npc_collision_events == 1


def test_a_pair_that_parts_and_touches_again_is_one_collision_a_new_pair_is_another():
    grid, tracker = road(), MetricTracker(4, 0.1)
    apart = agents_at([(-30.0, 0.0), (10.0, 0.0), (20.0, 0.0), (40.0, 0.0)], [True] * 4)
    tracker.prime(apart, 0, grid)
    touching = apart.with_state(apart.xy + np.array([[0.0, 0.0], [6.0, 0.0], [0.0, 0.0], [0.0, 0.0]]),
                                apart.yaw, apart.speed)
    jitter = apart.with_state(apart.xy + np.array([[0.0, 0.0], [5.3, 0.0], [0.0, 0.0], [0.0, 0.0]]),
                              apart.yaw, apart.speed)
    counts = [tracker.step(apart, state, 0, apart.valid, grid).npc_collision_events
              for state in (touching, jitter, touching, jitter, touching)]
    assert counts == [1, 0, 0, 0, 0]  # cars 1 and 2 jammed together, parting by centimetres: one collision
    third = touching.with_state(np.where(np.arange(4)[:, None] == 3, [[23.0, 0.0]] * 4, touching.xy),
                                touching.yaw, touching.speed)
    assert tracker.step(touching, third, 0, apart.valid, grid).npc_collision_events == 1  # car 3 joins


def test_kept_answers_equal_a_fresh_evaluation_every_step():
    """Overlap and off-road answers are kept for boxes that did not move; after any sequence of moves,
    spawns, removals and map changes they must equal a from-scratch evaluation."""
    rng = np.random.default_rng(3)
    n = 24
    grid, tracker = road(), MetricTracker(n, 0.1)
    start = rng.uniform([-40, -6], [140, 6], (n, 2))
    start[1] = (60.0, 10.0)  # stands off the road until a lane across it appears at x = 60
    agents = agents_at([tuple(p) for p in start], [True] * n)
    agents = agents.with_state(agents.xy, np.where(np.arange(n) == 1, np.pi / 2, agents.yaw), agents.speed)
    tracker.prime(agents, 0, grid)
    for step in range(60):
        xy = agents.xy.copy()
        movers = rng.random(n) < 0.3
        movers[1] = False
        xy[movers] += rng.normal(0.0, 1.5, (int(movers.sum()), 2))
        yaw = np.where(movers, agents.yaw + rng.normal(0.0, 0.2, n), agents.yaw)
        valid = agents.valid.copy()
        flip = rng.random(n) < 0.05
        flip[:2] = False
        valid[flip] = ~valid[flip]
        after = dataclasses.replace(agents, valid=valid).with_state(xy, yaw, agents.speed)
        if flip.any():
            tracker.reset_slots(np.nonzero(flip)[0])
        if step % 20 == 10:  # the map changes: a new lane across the road
            ys = np.linspace(-40.0, 40.0, 41)
            grid.add(Lane(100 + step, np.stack([np.full_like(ys, 60.0), ys], -1)))
        m = tracker.step(agents, after, 0, agents.valid & after.valid, grid)
        full = geometry.pairwise_box_overlap(after.xy, after.yaw, after.length, after.width, after.valid)
        assert set(m.ego_collided_ids) == {int(after.id[j]) for j in np.nonzero(full[0])[0]}
        assert np.array_equal(tracker._overlap, full)
        corners = geometry.box_corners(after.xy, after.yaw, after.length, after.width)
        offroad = after.valid & ~grid.contains(corners).all(-1)
        assert np.array_equal(tracker._offroad & after.valid, offroad)
        assert offroad[1] == (step < 10)
        agents = after
