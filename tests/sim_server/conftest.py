"""Fixtures: an in-process server on port 0 running short test-straight episodes, and clients for it."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import grpc
import pytest

import tests.straight_world  # noqa: F401 - registers the "test-straight" generator
from sim_server import simulator_service_pb2_grpc
from sim_server.client import SimClient
from sim_server.config import ServerConfig
from sim_server.server import SimServer, create_server
from vectorworld.sim.config import SessionConfig

TEST_DEFAULTS = SessionConfig(generator="test-straight", target_km=0.05)


def drive_local_and_served(client: SimClient, seed: int, target_km: float) -> tuple:
    """One episode driven to its end in-process and in a served session (the built-in planner):
    (local Session, its last Observation, the RemoteSession, its last Observation)."""
    from vectorworld.sim.session import Session

    local = Session(dataclasses.replace(TEST_DEFAULTS, seed=seed, target_km=target_km))
    obs = local.reset()
    while not obs.done:
        obs = local.step()
    remote = client.create_session(seed=seed, target_km=target_km)
    robs = remote.observation
    while not robs.done:
        robs = remote.step()
    return local, obs, remote, robs
"""Short episodes: ~65 steps of the straight two-lane test world."""


def server_config(**overrides: object) -> ServerConfig:
    base = ServerConfig(port=0, http_port=None, session_defaults=TEST_DEFAULTS, engine_workers=4,
                        grace_s=5.0)
    return dataclasses.replace(base, **overrides)


@pytest.fixture
def server() -> Iterator[SimServer]:
    srv = create_server(server_config())
    try:
        yield srv
    finally:
        srv.stop(grace_s=1.0)


@pytest.fixture
def client(server: SimServer) -> Iterator[SimClient]:
    with SimClient(f"127.0.0.1:{server.port}", timeout_s=30.0) as c:
        yield c


@pytest.fixture
def stub(server: SimServer) -> Iterator[simulator_service_pb2_grpc.SimulatorServiceStub]:
    with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        yield simulator_service_pb2_grpc.SimulatorServiceStub(channel)
