"""Live watching over gRPC (an in-process server on port 0) and keyboard drive mode."""

import dataclasses
from pathlib import Path

import numpy as np
import pygame
import pytest
from typer.testing import CliRunner

import tests.straight_world  # noqa: F401 - registers the "test-straight" generator
from vectorworld.cli import app
from vectorworld.sim.config import SessionConfig
from vectorworld.viewer import style
from vectorworld.viewer.drive_source import DriveKeys, DriveSource, command_from_keys
from vectorworld.viewer.frame_store import FrameStore
from vectorworld.viewer.live_source import LiveSource

grpc = pytest.importorskip("grpc")
from sim_server.client import SimClient  # noqa: E402
from sim_server.config import ServerConfig  # noqa: E402
from sim_server.server import create_server  # noqa: E402

TEST_DEFAULTS = SessionConfig(generator="test-straight", target_km=0.05)


@pytest.fixture
def server():
    srv = create_server(ServerConfig(port=0, http_port=None, session_defaults=TEST_DEFAULTS, max_workers=4))
    try:
        yield srv
    finally:
        srv.stop(grace_s=0.5)


def fast_client(target):
    return SimClient(target, timeout_s=5.0, retries=0)


def test_live_source_follows_a_session_and_reports_disconnection(server):
    target = f"127.0.0.1:{server.port}"
    with SimClient(target) as driver:
        remote = driver.create_session(seed=1)
        live = LiveSource(target, remote.id, client_factory=fast_client).connect()
        store = FrameStore()
        for frame, route in live.drain():
            store.append(frame)
            store.routes[store.last_index] = route
        assert len(store) == 1 and store.frames[0].step == 0
        assert set(store.map_at(0).lanes)  # the observation's lanes became the map
        client = fast_client(target)
        for _ in range(3):
            remote.step()
            live.poll_once(client)
        live.poll_once(client)  # no new step: no new frame
        frames = [f for f, _ in live.drain()]
        assert [f.step for f in frames] == [1, 2, 3]
        assert frames[-1].policy_of[frames[-1].ego_slot] == 0
        client.close()
    server.stop(grace_s=0.1)
    with pytest.raises(ConnectionError):
        LiveSource(target, remote.id, client_factory=fast_client).connect()
    broken = LiveSource(target, remote.id, client_factory=fast_client).start()
    try:
        for _ in range(100):
            if broken.disconnected:
                break
            broken._stop.wait(0.05)
        assert broken.disconnected and broken.status.startswith("disconnected")
    finally:
        broken.stop()


def test_view_connect_screenshot_and_unknown_session(server, tmp_path):
    target = f"127.0.0.1:{server.port}"
    with SimClient(target) as driver:
        remote = driver.create_session(seed=2)
        for _ in range(5):
            remote.step()
        out = tmp_path / "live.png"
        result = CliRunner().invoke(app, ["view", "--connect", target, "--session", remote.id,
                                          "--screenshot", str(out), "--size", "640x400"])
        assert result.exit_code == 0, result.output
        assert "step 5" in result.output
        assert tuple(pygame.image.load(str(out)).get_at((320, 200)))[:3] == style.EGO_FILL
        result = CliRunner().invoke(app, ["view", "--connect", target, "--session", "no-such-session",
                                          "--screenshot", str(tmp_path / "x.png")])
        assert result.exit_code == 2 and "NOT_FOUND" in result.output


def test_keys_make_control_commands():
    assert command_from_keys(DriveKeys(up=True), 5.0).accel_mps2 > 0
    assert command_from_keys(DriveKeys(down=True), 5.0).accel_mps2 < 0
    assert command_from_keys(DriveKeys(down=True), 0.0).accel_mps2 == 0.0  # brake never reverses
    assert command_from_keys(DriveKeys(left=True), 5.0).steering_rad > 0
    assert command_from_keys(DriveKeys(right=True), 5.0).steering_rad < 0
    fast, slow = command_from_keys(DriveKeys(left=True), 20.0), command_from_keys(DriveKeys(left=True), 2.0)
    assert 0 < fast.steering_rad < slow.steering_rad


def test_drive_source_steps_the_session_with_the_keyboard():
    config = dataclasses.replace(TEST_DEFAULTS, target_km=1.0, terminate_on_collision=False)
    src = DriveSource(config)
    speed0 = float(src.session.agents.speed[src.session.ego_slot])
    for _ in range(10):
        src.step(DriveKeys(up=True))
    assert float(src.session.agents.speed[src.session.ego_slot]) > speed0 + 1.5
    yaw0 = float(src.session.agents.yaw[src.session.ego_slot])
    for _ in range(10):
        src.step(DriveKeys(left=True))
    assert float(src.session.agents.yaw[src.session.ego_slot]) > yaw0 + 0.05
    assert len(src.store) == 21 and src.store.frames[-1].step == 20
    assert np.asarray(src.store.route_at(20)).shape[1] == 2


def test_window_loop_drives_steps_and_saves_a_screenshot(tmp_path):
    from vectorworld.viewer.app import run_window
    from vectorworld.viewer.view_session import ViewerSession

    config = dataclasses.replace(TEST_DEFAULTS, target_km=1.0, terminate_on_collision=False)
    src = DriveSource(config)
    key = lambda k: pygame.event.Event(pygame.KEYDOWN, key=k, mod=0)  # noqa: E731
    script = [[key(pygame.K_SPACE)]] + [[key(pygame.K_PERIOD)] for _ in range(5)] + \
        [[key(pygame.K_a)], [key(pygame.K_COMMA)], [key(pygame.K_s)], [pygame.event.Event(pygame.QUIT)]]
    frames = iter(script)
    run_window(ViewerSession(src.store, src.title, drive=src), (480, 320), screenshot_dir=tmp_path,
               next_events=lambda: next(frames))
    assert src.store.frames[-1].step >= 5 and src.autopilot
    shots = list(tmp_path.glob("vectorworld_step*.png"))
    assert len(shots) == 1 and pygame.image.load(str(shots[0])).get_size() == (480, 320)


WOMD = Path(__file__).resolve().parents[2] / "../shared/data/womd/motion_data_one_scenario.tfrecord"


@pytest.mark.skipif(not WOMD.exists(), reason="WOMD sample not available")
def test_drive_from_a_womd_log_shows_the_real_map():
    config = SessionConfig(scenario=f"womd:{WOMD}", npc_policy="log-replay", target_km=1.0,
                           terminate_on_collision=False, max_steps=10**6)
    src = DriveSource(config)
    src.autopilot = True
    for _ in range(3):
        src.step(DriveKeys())
    shown = set(src.store.map_at(src.store.last_index).lanes)
    assert shown == set(src.session.world.graph.lanes) and len(shown) > 50
    frame = src.store.frames[-1]
    assert (frame.policy_of[frame.agents.valid] == 2).sum() > 10  # log-replay agents
