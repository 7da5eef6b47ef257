"""Reaper housekeeping: free allocator memory goes back to the OS after sessions close."""

from __future__ import annotations

import sys
import threading

import pytest

from sim_server import server as server_module
from sim_server.client import SimClient
from sim_server.server import SimServer
from sim_server.sessions import SessionManager


def test_reaper_runs_its_housekeeping_hook_and_survives_its_errors() -> None:
    manager = SessionManager(max_sessions=2, idle_timeout_s=60.0)
    calls: list[int] = []
    twice = threading.Event()

    def tick() -> None:
        calls.append(1)
        if len(calls) >= 2:
            twice.set()
        raise RuntimeError("housekeeping broke")

    manager.start_reaper(0.01, on_tick=tick)
    try:
        assert twice.wait(5.0), "the reaper stopped after its hook raised"
    finally:
        manager.shutdown()


def test_memory_is_released_only_after_sessions_closed(server: SimServer, client: SimClient,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    released: list[int] = []
    monkeypatch.setattr(server_module, "release_free_memory", lambda: released.append(1) or True)
    assert server.release_memory() is False and released == []  # nothing closed yet
    client.create_session(seed=0).close()
    assert server.release_memory() is True
    assert server.release_memory() is False
    assert released == [1]  # once per batch of closes


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="malloc_trim is glibc's")
def test_release_free_memory_calls_the_c_library() -> None:
    assert server_module.release_free_memory() is True
