"""The closed-loop Session: reset / step / observe / close. The CLI, the server and the debugger all use it.

Per 0.1 s step: (1) outpaint tiles ahead of the ego, spawn their agents; (2) retire tiles and agents far
behind; (3) one batched NPC policy call; (4) the ego command; (5) integrate, compute metrics, record.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from policies.base import Policy, PolicyInput, make_policy
from policies.ego import EgoPlanner, load_planner, reset_planner
from policies.right_of_way import RightOfWay
from vectorworld import DT_S, geometry
from vectorworld.data.signal_replay import replay_signals
from vectorworld.errors import ConfigError, EpisodeFinishedError, StepMismatchError
from vectorworld.generation import make_generator
from vectorworld.scene import TILE_SIZE_M, Agents, AgentType, Lane, Tile
from vectorworld.scoring import EpisodeScorer
from vectorworld.signals import SignalBoard, SignalView, is_red, is_yellow
from vectorworld.sim.config import SessionConfig
from vectorworld.sim.crossings import Crossings
from vectorworld.sim.metrics import EpisodeMetrics, MetricTracker, StepMetrics, StuckRemoval
from vectorworld.sim.npc_drivers import LogReplayDriver, PolicyDriver
from vectorworld.sim.observation import EndReason, Frame, Observation
from vectorworld.sim.red_lights import red_light_entry
from vectorworld.sim.spawning import SpawnBook, parked_in_the_way, place_spawns, slow_for_lights
from vectorworld.sim.stuck_causes import stuck_cause
from vectorworld.stage_clock import StageClock
from vectorworld.vehicle.commands import (
    ControlCommand,
    EgoCommand,
    StateCommand,
    TrajectoryCommand,
    validate_command,
)
from vectorworld.vehicle.dynamics import bicycle_step, track_trajectory
from vectorworld.world import StreamingWorld
from vectorworld.world.routes import RouteBook, build_path

STUCK_TIMEOUT_S = 20.0
STUCK_PROGRESS_M = 1.0
MOVING_MPS = 1.0
WORLD_EDGE_LEAVE_M = 10.0
WORLD_EDGE_STANDING_M = 30.0
"""NPCs leave the world this close (m along their route) to its open end; a standing one already within
``WORLD_EDGE_STANDING_M`` (policies slow to a stop where their route runs out)."""
STANDING_MPS = 0.5
"""An NPC this close to the open end of its route leaves the world (IDM stops a gap and half a car length
short of an open end, so it would otherwise stand there until removed as stuck)."""
"""Agents faster than this could be surprised by a junction appearing in front of them (see StreamingWorld)."""
EGO_LENGTH_M = 4.8
EGO_WIDTH_M = 2.0


class Session:
    """One episode in a streaming world. Not thread-safe: the server serialises calls per session."""

    def __init__(self, config: SessionConfig, planner: EgoPlanner | None = None,
                 npc_policy: Policy | None = None) -> None:
        self.config = config.validate()
        self.generator = make_generator(config.generator)
        self.log_replay = config.npc_policy == "log-replay"
        self.npc_policy = npc_policy or (None if self.log_replay else make_policy(config.npc_policy))
        self.planner = planner or load_planner(config.planner)
        self.scenario = None
        if config.scenario is not None:
            from vectorworld.data.sources import load_scenario

            self.scenario = load_scenario(config.scenario, nuplan_maps_dir=config.nuplan_maps_dir)
        self.driver: PolicyDriver | LogReplayDriver = (LogReplayDriver(self.scenario) if self.log_replay
                                                       else PolicyDriver(self.npc_policy))
        self.right_of_way = RightOfWay()
        """The per-step right-of-way service: one decision per step for every policy and planner."""
        self._reset_state()

    # ----------------------------------------------------------------- lifecycle
    def _reset_state(self) -> None:
        seeds = np.random.SeedSequence(self.config.seed).spawn(5)
        self.world_rng, self.npc_rng, self.route_rng, self.spawn_rng, crossing_rng = (np.random.Generator(
            np.random.PCG64(s)) for s in seeds)
        self.crossings = Crossings(crossing_rng)
        self.world = StreamingWorld(self.generator, self.world_rng, self.config.world)
        self.agents = Agents.empty(self.config.agent_capacity)
        self.routes = RouteBook()
        self.spawns = SpawnBook()
        self.signal_board = SignalBoard()
        self.right_of_way.reset()
        self.metrics = EpisodeMetrics()
        self.tracker = MetricTracker(self.config.agent_capacity, DT_S)
        self.scorer = EpisodeScorer(DT_S)
        self.step_index = 0
        self.end_reason = EndReason.NONE
        self.ego_slot = 0
        self.ego_id = 0
        self.ego_plan = np.zeros((0, 3))
        self.wall_s = 0.0
        self.stages = StageClock()
        """Wall time per stage of :meth:`advance` over the episode (timing only)."""
        self._last_step_metrics = StepMetrics()
        self._pending_tiles: list[Tile] = []
        self._pending_lanes: list[Lane] = []
        self._removed_lanes: list[int] = []
        self._tile_ms_step = 0.0
        self._npc_ms_step = 0.0
        self._stopped_s = np.zeros(self.config.agent_capacity)
        self._stuck_at = np.zeros((self.config.agent_capacity, 2))
        self.stuck_removed = 0
        self.stuck_causes: dict[str, int] = {}
        self.closed = False

    def reset(self) -> Observation:
        """Start the episode: from the log if one is configured, else a first tile with the ego on it."""
        self._reset_state()
        if self.npc_policy is not None:
            self.npc_policy.reset()
        reset_planner(self.planner)
        t0 = time.perf_counter()
        if self.scenario is not None:
            self._start_from_log()
        else:
            self._start_generated()
        self._cover()
        self.tracker.prime(self.agents, self.ego_slot, self.world.drivable)
        self.scorer.prime(self.agents, self.ego_slot, self.world.graph)
        self.wall_s += time.perf_counter() - t0
        return self.observe()

    def _start_from_log(self) -> None:
        """Real map as known world, real agents with their real history; the ego is the SDC."""
        sc = self.scenario
        if sc.sdc_index < 0:
            raise ConfigError(f"scenario {sc.scenario_id} has no ego (SDC) track to drive")
        lights = replay_signals(sc.signals, sc.map.lanes, sc.current_index, DT_S)
        self.world.add_known_map([dataclasses.replace(lane, signal=lights[lane.id]) if lane.id in lights else lane
                                  for lane in sc.map.lanes.lanes.values()])
        self._pending_lanes.extend(self.world.graph.lanes.values())  # recordings carry the real map
        capacity = max(self.config.agent_capacity, sc.tracks.num_tracks + 32)
        self.agents = sc.agents_at(capacity=capacity)
        self.ego_id = int(sc.tracks.ids[sc.sdc_index])
        self.ego_slot = self.agents.slot_of(self.ego_id)
        self.spawns.next_id = int(max(sc.tracks.ids.max() + 1, 1))
        self.tracker = MetricTracker(capacity, DT_S)
        self._stopped_s = np.zeros(capacity)
        self._stuck_at = np.zeros((capacity, 2))
        for slot in np.nonzero(self.agents.valid)[0]:
            agent_id = int(self.agents.id[slot])
            lane_id, dist = self.world.graph.nearest(self.agents.xy[slot], float(self.agents.yaw[slot]), 4.0)
            on_lane = lane_id >= 0 and dist <= 2.0 and _aligned(self.world.graph[lane_id], self.agents.xy[slot],
                                                                 float(self.agents.yaw[slot]))
            # Agents off the lanes (parked, in lots) get no route: lane-following policies hold them still.
            if (on_lane or agent_id == self.ego_id) and self.agents.agent_type[slot] != AgentType.PEDESTRIAN:
                self.routes.assign(agent_id, lane_id)
                self.routes.extend(self.world.graph, self.route_rng, agent_id, dead_ends=self.world.dead_ends)
        if not self.routes.get(self.ego_id):
            raise ConfigError(f"scenario {sc.scenario_id}: the ego is not on any lane of the map")

    def _start_generated(self) -> None:
        first = self.world.start()
        self._pending_tiles.append(first.tile)
        self._pending_lanes.extend(first.content.lanes)
        self.metrics.tile_ms.append(first.tile.latency_ms)
        ego_lane = self._start_lane(first.content.lanes)
        start_xy, start_yaw = self._point_on(ego_lane, 8.0)
        self.agents = place_ego(self.agents, self.ego_slot, start_xy, start_yaw,
                                self.config.ego_start_speed_mps)
        self.routes.assign(self.ego_id, ego_lane.id)
        self.routes.extend(self.world.graph, self.route_rng, self.ego_id, dead_ends=self.world.dead_ends)
        self._spawn(first.content.agents)

    def close(self) -> None:
        self.closed = True

    @property
    def done(self) -> bool:
        return self.end_reason != EndReason.NONE

    # ----------------------------------------------------------------- stepping
    def step(self, command: EgoCommand | None = None, expected_step: int | None = None) -> Observation:
        """Advance 0.1 s and observe. ``command`` None lets the session's built-in planner drive."""
        self.advance(command, expected_step)
        return self.observe()

    def advance(self, command: EgoCommand | None = None, expected_step: int | None = None) -> None:
        """Advance 0.1 s without building an observation (batch rollouts use this)."""
        if self.done:
            raise EpisodeFinishedError(f"episode already ended ({self.end_reason.value}) at step "
                                       f"{self.step_index}; reset or create a new session")
        if expected_step is not None and expected_step != self.step_index:
            raise StepMismatchError(f"step request names step {expected_step} but the session is at "
                                    f"step {self.step_index}")
        t0 = time.perf_counter()
        clock = self.stages
        clock.start()
        before = self.agents
        if command is not None:  # refused before anything moves, so a bad request changes nothing
            command = validate_command(command, before.xy[self.ego_slot])
        inp = self.policy_input(np.zeros(before.capacity, bool))
        clock.lap("right_of_way")
        # NPCs: one batched call. It goes first so that a planning pass the IDM ego planner shares with the
        # IDM NPCs is timed as NPC policy time; both decide from the same state, so the order is free.
        xy, yaw, speed, valid = self.driver.move(before, inp, self.ego_slot, self.step_index, self.npc_rng)
        npc_ms = clock.lap("npc_policy")
        walkers, xy_w, yaw_w, speed_w = self.crossings.move(before, self.world.crosswalks, self.world.graph,
                                                             self.routes.routes, self.step_index * DT_S, DT_S)
        xy[walkers], yaw[walkers], speed[walkers] = xy_w, yaw_w, speed_w
        npc_ms += clock.lap("pedestrians")
        if command is None:
            command = validate_command(self.planner.plan(inp), before.xy[self.ego_slot])
        clock.lap("ego_planner")
        self._pending_tiles, self._pending_lanes, self._removed_lanes = [], [], []
        self._npc_ms_step = npc_ms
        self.metrics.npc_policy_ms.append(npc_ms)
        ego_xy, ego_yaw, ego_speed = self._ego_next(command)
        xy[self.ego_slot], yaw[self.ego_slot], speed[self.ego_slot] = ego_xy, ego_yaw, ego_speed
        self.agents = dataclasses.replace(before, valid=valid).with_state(xy, yaw, speed)
        self.step_index += 1
        clock.lap("integrate")
        step_metrics = self.tracker.step(before, self.agents, self.ego_slot, before.valid & self.agents.valid,
                                         self.world.drivable)
        e = self.ego_slot
        red = red_light_entry(before.xy[e], float(before.yaw[e]), self.agents.xy[e], float(self.agents.yaw[e]),
                              float(self.agents.length[e]), inp.signals, self.world.graph,
                              self.routes.get(self.ego_id))
        if red is not None:
            step_metrics = dataclasses.replace(step_metrics, ego_red_light=True)
            self.scorer.red_light(self.step_index, red)
        self.metrics.add(step_metrics)
        clock.lap("metrics")
        routed = np.fromiter(self.routes.routes, np.int64, len(self.routes.routes))
        self.scorer.step(self.step_index, self.agents, self.ego_slot, self.world.graph,
                         tuple(self.routes.get(self.ego_id)), step_metrics.ego_collided_ids, step_metrics.ego_offroad,
                         traffic=np.isin(self.agents.id, routed))
        started = self.scorer.events_at(self.step_index)
        if started:
            step_metrics = dataclasses.replace(step_metrics, score_events=started)
        self._last_step_metrics = step_metrics
        clock.lap("scoring")
        live = np.nonzero(self.agents.valid)[0]
        self.routes.advance(self.world.graph, self.agents.id[live], self.agents.xy[live], self.agents.yaw[live])
        for agent_id in np.sort(self.agents.id[live]).tolist():
            self.routes.extend(self.world.graph, self.route_rng, agent_id, dead_ends=self.world.dead_ends)
        self._avoid_dead_end()
        clock.lap("routes")
        self._cover()
        clock.lap("world")
        self._retire()
        self._update_end(step_metrics)
        clock.lap("retire")
        self.wall_s += time.perf_counter() - t0

    def _ego_next(self, command: EgoCommand) -> tuple[np.ndarray, float, float]:
        a, e = self.agents, self.ego_slot
        xy, yaw, speed = a.xy[e], float(a.yaw[e]), float(a.speed[e])
        if isinstance(command, StateCommand):
            self.ego_plan = np.zeros((0, 3))
            return np.array([command.x_m, command.y_m]), command.yaw_rad, command.speed_mps
        if isinstance(command, TrajectoryCommand):
            self.ego_plan = command.poses
            accel, steering = track_trajectory(xy, yaw, speed, command.poses, DT_S)
        else:
            assert isinstance(command, ControlCommand)
            self.ego_plan = np.zeros((0, 3))
            accel, steering = command.accel_mps2, command.steering_rad
        return bicycle_step(xy, yaw, speed, accel, steering, DT_S)

    def _update_end(self, m: StepMetrics) -> None:
        if self.config.terminate_on_collision and m.ego_collided_ids:
            self.end_reason = EndReason.COLLISION
        elif self.driver.log_ended(self.step_index):
            self.end_reason = EndReason.LOG_ENDED
        elif self.metrics.distance_m >= self.config.target_km * 1000.0:
            self.end_reason = EndReason.GOAL_REACHED
        elif self.step_index >= self.config.step_limit:
            self.end_reason = EndReason.MAX_STEPS
        elif self._at_dead_end():
            self.end_reason = EndReason.NO_ROAD

    # ----------------------------------------------------------------- world upkeep
    def _cover(self) -> None:
        e = self.ego_slot
        route = self.routes.get(self.ego_id)
        a = self.agents
        new = self.world.ensure_coverage(a.xy[e], float(a.yaw[e]), route[-1] if route else None, a.xy[a.valid],
                                         a.xy[a.valid & (a.speed > MOVING_MPS)])
        self._tile_ms_step = sum(g.tile.latency_ms for g in new)
        for generated in new:
            if not generated.tile.fallback:  # not generated: no latency to report
                self.metrics.tile_ms.append(generated.tile.latency_ms)
            self._pending_tiles.append(generated.tile)
            self._pending_lanes.extend(self.world.graph[lane.id] for lane in generated.content.lanes)
            self._spawn(generated.content.agents)
            if self.driver.manages_traffic and generated.crosswalks:
                self._spawn_walkers(generated.crosswalks)
        if new:
            self.routes.extend(self.world.graph, self.route_rng, self.ego_id, dead_ends=self.world.dead_ends)
            graph = self.world.graph
            near = sorted({i for g in new for i in graph.near(g.tile.center_xy, TILE_SIZE_M)})
            self._remove(parked_in_the_way(self.agents, set(self.routes.routes), [graph[i] for i in near]))

    def _spawn(self, spawns) -> None:  # noqa: ANN001 - AgentSpawns
        ego_xy = self.agents.xy[self.ego_slot]
        self.agents, placed = place_spawns(self.agents, spawns, ego_xy, self.spawns)
        for agent_id, lane_id in placed:
            if lane_id in self.world.graph:
                self.routes.assign(agent_id, lane_id)
                self.routes.extend(self.world.graph, self.route_rng, agent_id, dead_ends=self.world.dead_ends)
        if placed:  # a tile's traffic never appears too fast to stop for a light on its route
            slots = np.flatnonzero(np.isin(self.agents.id, [agent_id for agent_id, _ in placed]) & self.agents.valid)
            inp = PolicyInput(agents=self.agents, controlled=np.zeros(self.agents.capacity, bool),
                              graph=self.world.graph, routes=self.routes.routes, ego_slot=self.ego_slot,
                              step=self.step_index, signals=self.signals())
            self.agents = slow_for_lights(self.agents, slots, self.right_of_way.red_ahead_m(inp, slots))

    def _spawn_walkers(self, crosswalks) -> None:  # noqa: ANN001 - tuple[Crosswalk, ...]
        """Pedestrians waiting at the kerbs of new crosswalks (:mod:`vectorworld.sim.crossings`)."""
        spawns, walkers = self.crossings.spawns(crosswalks, self.step_index * DT_S)
        ego_xy = self.agents.xy[self.ego_slot]
        for k, walker in enumerate(walkers):
            one = np.zeros(len(walkers), bool)
            one[k] = True
            self.agents, placed = place_spawns(self.agents, spawns.select(one), ego_xy, self.spawns)
            for agent_id, _ in placed:
                walker.agent_id = agent_id
                self.crossings.add(walker)

    def _retire(self) -> None:
        ego_xy = self.agents.xy[self.ego_slot]
        removed = self.world.retire(ego_xy)
        self._removed_lanes.extend(removed)
        far = self.agents.valid & (np.linalg.norm(self.agents.xy - ego_xy, axis=-1)
                                   > self.config.world.retention_m)
        if removed:  # NPCs leave with the road under or ahead of them (a retired tile's lanes reach past its
            # centre; one driving on into a retired lane would leave the drivable area where the world ended)
            gone = set(removed)
            far |= np.array([bool(r) and not gone.isdisjoint(r)
                             for r in map(self.routes.get, self.agents.id.tolist())])
        far |= self._at_world_edge()
        if self.driver.manages_traffic:
            far |= self._stuck()
        self._remove(far)

    def _remove(self, gone: np.ndarray) -> None:
        """Take the NPCs in the (C,) mask out of the world (never the ego)."""
        gone = gone & self.agents.valid
        gone[self.ego_slot] = False
        if not gone.any():
            return
        slots = np.nonzero(gone)[0]
        for slot in slots:
            self.routes.drop(int(self.agents.id[slot]))
        self.crossings.forget(self.agents.id[slots].tolist())
        self.agents = dataclasses.replace(self.agents, valid=self.agents.valid & ~gone,
                                          id=np.where(gone, -1, self.agents.id))
        self.tracker.reset_slots(slots)

    def _avoid_dead_end(self) -> None:
        """If the ego's route runs into a lane the world could not continue, re-plan it from the ego's
        current lane (the planner under test is free to ignore the suggested route)."""
        route = self.routes.get(self.ego_id)
        dead = self.world.dead_ends
        if len(route) > 1 and any(i in dead for i in route[1:]):
            self.routes.assign(self.ego_id, route[0])
            self.routes.extend(self.world.graph, self.route_rng, self.ego_id, dead_ends=dead)

    def _at_dead_end(self) -> bool:
        """The ego stands at the end of a lane the world could not continue: the episode cannot go on."""
        route, e = self.routes.get(self.ego_id), self.ego_slot
        if len(route) != 1 or route[0] not in self.world.dead_ends or self.agents.speed[e] > 0.1:
            return False
        end, _ = self.world.graph[route[0]].end_pose
        return bool(np.linalg.norm(self.agents.xy[e] - end) < 10.0)

    def _stuck(self) -> np.ndarray:
        """(C,) NPCs in traffic (on a route; parked cars never count) that have not made
        ``STUCK_PROGRESS_M`` of progress (crawling in a jam counts) for ``STUCK_TIMEOUT_S``: they are
        removed (as SUMO teleports jammed vehicles), so a local jam never blocks an episode forever. Time spent
        waiting at a red or yellow light, or for a pedestrian on a crosswalk, does not count."""
        a = self.agents
        routed = np.fromiter(self.routes.routes, np.int64, len(self.routes.routes))
        in_traffic = np.isin(a.id, routed) & a.valid  # not parked cars
        progressed = (np.linalg.norm(a.xy - self._stuck_at, axis=-1) > STUCK_PROGRESS_M) | ~in_traffic
        self._stuck_at = np.where(progressed[:, None], a.xy, self._stuck_at)
        # The clock pauses (not resets) while an agent waits for a light: a car that does not move on green
        # still leaves after STUCK_TIMEOUT_S of green time.
        waiting = self._waiting_for_light() | self._held_by_pedestrians()
        self._stopped_s = np.where(progressed, 0.0, self._stopped_s + np.where(waiting, 0.0, DT_S))
        stuck = self._stopped_s > STUCK_TIMEOUT_S
        removals = self._count_causes(stuck & self.agents.valid)
        self.stuck_removed += len(removals)
        if removals:  # the step's metrics (its observation and frame) carry them: the debugger shows them
            self._last_step_metrics = dataclasses.replace(self._last_step_metrics, stuck_removals=removals)
        return stuck

    def _count_causes(self, stuck: np.ndarray) -> tuple[StuckRemoval, ...]:
        """Add each stuck NPC's cause (:mod:`vectorworld.sim.stuck_causes`) to ``stuck_causes``; return the
        NPCs (never the ego) with their causes and where they stand."""
        if not stuck.any():
            return ()
        decision = self.right_of_way.last
        held = dict(decision.held) if decision is not None else {}
        by_light = decision.by_light if decision is not None else frozenset()
        a = self.agents
        removals = []
        for slot in np.nonzero(stuck)[0].tolist():
            if slot == self.ego_slot:
                continue
            agent_id = int(a.id[slot])
            cause = stuck_cause(a, slot, self.routes.get(agent_id), self.world.graph, held, by_light)
            self.stuck_causes[cause] = self.stuck_causes.get(cause, 0) + 1
            removals.append(StuckRemoval(agent_id, cause, float(a.xy[slot, 0]), float(a.xy[slot, 1]),
                                         float(a.yaw[slot])))
        return tuple(removals)

    def _waiting_for_light(self) -> np.ndarray:
        """(C,) agents queued at a red or yellow light: one of the next two lanes of their route is signalised
        and not green. Waiting for a light is no jam: their stuck clock does not run."""
        out = np.zeros(self.agents.capacity, bool)
        view = self.signals()
        if not len(view):
            return out
        stopped = {int(i) for i, st in zip(view.lane_ids, view.rule_states, strict=True)
                   if is_red(st) or is_yellow(st)}
        if not stopped:
            return out
        for slot in np.nonzero(self.agents.valid)[0]:
            route = self.routes.get(int(self.agents.id[slot]))
            out[slot] = any(lane in stopped for lane in route[1:3])
        return out

    def _held_by_pedestrians(self) -> np.ndarray:
        """(C,) agents the step's right of way holds for a pedestrian on a crosswalk (no jam either)."""
        decision = self.right_of_way.last
        if decision is None or not decision.by_crossing:
            return np.zeros(self.agents.capacity, bool)
        return self.agents.valid & np.isin(self.agents.id, list(decision.by_crossing))

    def _at_world_edge(self) -> np.ndarray:
        """(C,) NPCs that reached the open end of their route (the world is not generated beyond it
        because the ego is not heading there): they leave the world instead of blocking the road."""
        out = np.zeros(self.agents.capacity, bool)
        if not self.driver.manages_traffic:
            return out
        graph, a = self.world.graph, self.agents
        for slot in np.nonzero(a.valid)[0]:
            route = self.routes.get(int(a.id[slot]))
            if (not route or route[-1] not in graph or graph[route[-1]].successors
                    or any(i not in graph for i in route)):
                continue  # no route, no open end, or a lane of it retired this step (it leaves with it)
            standing = abs(a.speed[slot]) < STANDING_MPS
            if len(route) > 1 and not standing:
                continue  # a moving agent leaves on its last lane
            reach = WORLD_EDGE_STANDING_M if standing else WORLD_EDGE_LEAVE_M
            beyond = sum(graph[i].length_m for i in route[1:])
            if beyond > reach + 1.0:
                continue  # the lanes after the first alone are longer than the reach: no need to project
            first = graph[route[0]]
            along, _, _ = geometry.project_to_polyline(a.xy[slot][None], first.points)
            out[slot] = first.length_m - float(along[0]) + beyond < reach
        return out

    # ----------------------------------------------------------------- views
    def signals(self) -> SignalView:
        """The state of every traffic light of the known world at the current step."""
        return self.signal_board.view(self.world.graph, self.step_index * DT_S)

    def policy_input(self, controlled: np.ndarray) -> PolicyInput:
        """What a policy or planner sees of the current step, with ``controlled`` (C,) the slots it moves, and
        the step's right-of-way decision (taken once per step, whoever asks first)."""
        inp = PolicyInput(agents=self.agents, controlled=controlled, graph=self.world.graph,
                          routes=self.routes.routes, ego_slot=self.ego_slot, step=self.step_index,
                          dt_s=DT_S, motion_codes=self.spawns.motion_codes, signals=self.signals(),
                          crossing_blocked=self.crossings.blocked(self.world.crosswalks, self.world.graph,
                                                                  self.agents))
        return dataclasses.replace(inp, right_of_way=self.right_of_way.decide(inp))

    def observe(self, radius_m: float | None = None) -> Observation:
        radius = self.config.observation_radius_m if radius_m is None else radius_m
        a, e = self.agents, self.ego_slot
        ego_xy = a.xy[e]
        keep = a.valid & (np.linalg.norm(a.xy - ego_xy, axis=-1) <= radius)
        keep[e] = True
        order = np.concatenate([[e], np.nonzero(keep & (np.arange(a.capacity) != e))[0]])
        visible = Agents(**{f.name: getattr(a, f.name)[order] for f in dataclasses.fields(Agents)})
        lanes = [self.world.graph[i] for i in self.world.graph.within(ego_xy, radius)]
        route = tuple(i for i in self.routes.get(self.ego_id) if i in self.world.graph)
        polyline = build_path(self.world.graph, route).points if route else np.zeros((0, 2))
        return Observation(step=self.step_index, sim_time_us=self.step_index * int(DT_S * 1e6),
                           agents=visible, ego_slot=0, lanes=tuple(lanes), route_lane_ids=route,
                           route_polyline=polyline, step_metrics=self._last_step_metrics,
                           terminated=self.end_reason in (EndReason.COLLISION, EndReason.GOAL_REACHED),
                           truncated=self.end_reason in (EndReason.MAX_STEPS, EndReason.LOG_ENDED,
                                                         EndReason.NO_ROAD),
                           end_reason=self.end_reason, km=self.metrics.distance_m / 1000.0,
                           signals=self.signals().subset(lane.id for lane in lanes),
                           crosswalks=tuple(w for w in self.world.crosswalks.values()
                                            if np.linalg.norm(w.walk.mean(0) - ego_xy) <= radius),
                           occupied_crosswalks=self.crossings.occupied(self.world.crosswalks))

    def frame(self) -> Frame:
        """The full world state of the current step (for recordings and the debugger)."""
        policy_of = np.where(self.agents.valid, self.driver.controller, -1).astype(np.int8)
        policy_of[self.ego_slot] = 0
        return Frame(step=self.step_index, sim_time_us=self.step_index * int(DT_S * 1e6),
                     agents=self.agents, ego_slot=self.ego_slot, policy_of=policy_of,
                     new_tiles=tuple(self._pending_tiles), new_lanes=tuple(self._pending_lanes),
                     removed_lane_ids=tuple(self._removed_lanes), ego_plan=self.ego_plan,
                     step_metrics=self._last_step_metrics, km=self.metrics.distance_m / 1000.0,
                     tile_ms=self._tile_ms_step, npc_policy_ms=self._npc_ms_step,
                     end_reason=self.end_reason, signals=self.signals(),
                     crosswalks=tuple(self.world.crosswalks.values()),
                     occupied_crosswalks=self.crossings.occupied(self.world.crosswalks))

    def report(self) -> dict:
        """The per-episode report: DESIGN.md section 7 metrics plus bookkeeping."""
        summary = self.metrics.summary()
        sim_s = self.step_index * DT_S
        scores = self.scorer.report(self.end_reason.value, self.config.target_km, summary["km"])
        return {"seed": self.config.seed, **summary, **scores,
                "completed": self.end_reason == EndReason.GOAL_REACHED,
                "end_reason": self.end_reason.value, "sim_s": round(sim_s, 3),
                "wall_s": round(self.wall_s, 4), "rtf": round(sim_s / max(self.wall_s, 1e-9), 3),
                "tiles": len(self.metrics.tile_ms), "fallback_tiles": self.world.fallback_tiles,
                "npc_removed_stuck": self.stuck_removed,
                "npc_removed_stuck_causes": dict(sorted(self.stuck_causes.items()))}

    # ----------------------------------------------------------------- helpers
    def _start_lane(self, lanes: tuple[Lane, ...]) -> Lane:
        """The lane of the first tile closest to (-24 m, right of the road) heading +x."""
        target = np.array([-24.0, -2.0])
        best = min((lane for lane in lanes if abs(float(geometry.wrap_angle(lane.start_pose[1]))) < 0.5),
                   key=lambda lane: float(np.linalg.norm(lane.points - target, axis=-1).min()),
                   default=None)
        if best is None:
            raise ConfigError("the first tile has no lane heading along +x to start the ego on")
        return best

    @staticmethod
    def _point_on(lane: Lane, s_m: float) -> tuple[np.ndarray, float]:
        s = min(s_m, lane.length_m / 2.0)
        pts = geometry.interpolate_polyline(lane.points, lane.arc_length, np.array([s, s + 0.5]))
        d = pts[1] - pts[0]
        return pts[0], float(np.arctan2(d[1], d[0]))


def _aligned(lane: Lane, xy: np.ndarray, yaw: float, max_rad: float = 0.5) -> bool:
    _, _, heading = geometry.project_to_polyline(xy[None], lane.points)
    return abs(float(geometry.wrap_angle(yaw - heading[0]))) <= max_rad


def place_ego(agents: Agents, slot: int, xy: np.ndarray, yaw: float, speed: float) -> Agents:
    """Agents with the ego in ``slot``: id 0, a 4.8 m x 2.0 m vehicle, history at constant speed."""
    steps = agents.history.shape[1]
    back = (np.arange(steps)[::-1] * speed * DT_S)
    hist = np.stack([xy[0] - back * np.cos(yaw), xy[1] - back * np.sin(yaw), np.full(steps, yaw),
                     np.full(steps, speed)], -1)
    arrays = {f.name: getattr(agents, f.name).copy() for f in dataclasses.fields(Agents)}
    arrays["id"][slot], arrays["valid"][slot] = 0, True
    arrays["agent_type"][slot] = AgentType.VEHICLE
    arrays["xy"][slot], arrays["yaw"][slot], arrays["speed"][slot] = xy, yaw, speed
    arrays["length"][slot], arrays["width"][slot] = EGO_LENGTH_M, EGO_WIDTH_M
    arrays["history"][slot], arrays["history_valid"][slot] = hist, True
    return Agents(**arrays)
