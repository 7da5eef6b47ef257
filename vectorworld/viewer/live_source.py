"""Watch a live served session read-only: poll GetSession and turn each new observation into a Frame.

Observations carry the lanes within the observation radius, not tiles, so the map shown is the union of
lanes seen so far (lanes far behind the ego are dropped again). Polling runs in a background thread so
the window stays responsive; a failed call marks the source "disconnected" (the last frame stays on
screen) and polling keeps retrying. The gRPC client (``sim_server.client``) is imported only here.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from vectorworld.scene import Lane
from vectorworld.sim.observation import Frame, Observation

FORGET_LANES_BEYOND_M = 250.0
POLL_INTERVAL_S = 0.05
RETRY_INTERVAL_S = 1.0


def observation_to_frame(obs: Observation, known: dict[int, Lane]) -> Frame:
    """A Frame from an observation; ``known`` (lane id -> lane seen so far) is updated in place.

    new_lanes: lanes not seen before; removed_lane_ids: known lanes farther than FORGET_LANES_BEYOND_M
    from the ego. Every agent is marked as moved by the NPC policy except the ego (policy 0).
    """
    new = [lane for lane in obs.lanes if lane.id not in known]
    for lane in new:
        known[lane.id] = lane
    ego_xy = obs.agents.xy[obs.ego_slot]
    seen = {lane.id for lane in obs.lanes}
    removed = [i for i, lane in known.items() if i not in seen
               and float(np.min(np.linalg.norm(lane.points - ego_xy, axis=-1))) > FORGET_LANES_BEYOND_M]
    for i in removed:
        del known[i]
    policy = np.where(obs.agents.valid, 1, -1).astype(np.int8)
    policy[obs.ego_slot] = 0
    return Frame(step=obs.step, sim_time_us=obs.sim_time_us, agents=obs.agents, ego_slot=obs.ego_slot,
                 policy_of=policy, new_tiles=(), new_lanes=tuple(new), removed_lane_ids=tuple(removed),
                 ego_plan=np.zeros((0, 3)), step_metrics=obs.step_metrics, km=obs.km, tile_ms=0.0,
                 npc_policy_ms=0.0, end_reason=obs.end_reason, signals=obs.signals, crosswalks=obs.crosswalks,
                 occupied_crosswalks=obs.occupied_crosswalks)


class LiveSource:
    """Polls one session of a server. ``client_factory(target)`` returns a ``sim_server.client.SimClient``.

    Frames (with the observation's route polyline) arrive in :meth:`drain`; :attr:`status` is a line for
    the HUD ("" while connected and running).
    """

    def __init__(self, target: str, session_id: str, token: str | None = None,
                 client_factory: Callable[[str], Any] | None = None) -> None:
        self.target, self.session_id = target, session_id
        self._factory = client_factory or _default_factory(token)
        self._queue: queue.Queue[tuple[Frame, np.ndarray]] = queue.Queue()
        self._stop = threading.Event()
        self._known: dict[int, Lane] = {}
        self._last_step: int | None = None
        self.status = "connecting..."
        self.disconnected = False
        self.finished = False
        self._thread = threading.Thread(target=self._run, name="vw-live-view", daemon=True)

    @property
    def title(self) -> str:
        return f"live {self.target}  session {self.session_id}"

    def start(self) -> LiveSource:
        self._thread.start()
        return self

    def connect(self) -> LiveSource:
        """Check the link once, synchronously, before a window opens; raises ConnectionError if the
        server cannot be reached or does not know the session."""
        try:
            client = self._factory(self.target)
        except Exception as err:  # noqa: BLE001
            raise ConnectionError(f"cannot connect to {self.target}: {err}") from err
        try:
            self.poll_once(client)
        except Exception as err:  # noqa: BLE001
            raise ConnectionError(f"cannot watch session {self.session_id!r} on {self.target}: "
                                  f"{_describe(err)} {_details(err)}".rstrip()) from err
        finally:
            client.close()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)

    def drain(self) -> list[tuple[Frame, np.ndarray]]:
        """Frames received since the last call, oldest first, each with its route (P, 2)."""
        out = []
        while True:
            try:
                out.append(self._queue.get_nowait())
            except queue.Empty:
                return out

    def poll_once(self, client: Any) -> None:
        """One GetSession call; queues a frame when the session has advanced. Raises on RPC errors."""
        status = client.get_session(self.session_id, include_observation=True)
        self.disconnected = False
        self.finished = bool(status.finished)
        self.status = f"episode ended: {status.end_reason}" if self.finished else ""
        obs = status.observation
        if obs is None or obs.step == self._last_step:
            return
        self._last_step = obs.step
        self._queue.put((observation_to_frame(obs, self._known), np.asarray(obs.route_polyline)))

    def _run(self) -> None:
        client = None
        while not self._stop.is_set():
            try:
                if client is None:
                    client = self._factory(self.target)
                self.poll_once(client)
                self._stop.wait(POLL_INTERVAL_S)
            except Exception as err:  # noqa: BLE001 - any failure of the link means "disconnected"
                self.disconnected = True
                self.status = f"disconnected ({_describe(err)}); retrying"
                if client is not None:
                    try:
                        client.close()
                    except Exception:  # noqa: BLE001
                        pass
                    client = None
                self._stop.wait(RETRY_INTERVAL_S)
        if client is not None:
            client.close()


def _describe(err: Exception) -> str:
    code = getattr(err, "code", None)
    if callable(code):
        try:
            return str(code().name)
        except Exception:  # noqa: BLE001
            pass
    return type(err).__name__


def _details(err: Exception) -> str:
    details = getattr(err, "details", None)
    if callable(details):
        try:
            return f"({details()})"
        except Exception:  # noqa: BLE001
            pass
    return ""


def _default_factory(token: str | None) -> Callable[[str], Any]:
    def make(target: str) -> Any:
        from sim_server.client import SimClient

        return SimClient(target, token=token, timeout_s=5.0, retries=0)

    return make
