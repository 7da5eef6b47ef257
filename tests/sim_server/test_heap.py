"""The server's GC policy (``sim_server/heap.py``): live sessions' objects are frozen, out of every full
collection; closed sessions' garbage is thawed and freed once enough of it piled up."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from sim_server.client import SimClient
from sim_server.config import ServerConfig
from sim_server.heap import HeapFreezer
from sim_server.server import create_server
from tests.sim_server.conftest import server_config


class Node:
    """A reference cycle, as a session's world is: refcounting alone never frees it."""

    def __init__(self) -> None:
        self.me = self


def tracked(obj: object) -> bool:
    """Whether a collection walks ``obj`` (frozen objects are not in ``gc.get_objects()``)."""
    return any(o is obj for o in gc.get_objects())


@pytest.fixture(autouse=True)
def unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_settle_moves_survivors_out_of_the_collections_and_release_brings_them_back() -> None:
    heap = HeapFreezer()
    node = Node()
    assert tracked(node)
    heap.settle()
    assert not tracked(node) and heap.frozen() > 0
    heap.release()
    assert tracked(node) and heap.frozen() == 0


def test_settle_collects_garbage_before_freezing_it() -> None:
    heap = HeapFreezer()
    garbage = Node()
    gone = weakref.ref(garbage)
    del garbage
    heap.settle()
    assert gone() is None  # collected, not frozen forever


def test_disabled_freezes_nothing() -> None:
    heap = HeapFreezer(enabled=False)
    node = Node()
    heap.settle()
    assert not heap.tick(live_sessions=0, closed_total=5)
    assert tracked(node) and heap.frozen() == 0


def test_closed_sessions_garbage_is_thawed_only_past_the_fraction() -> None:
    heap = HeapFreezer(thaw_fraction=0.25)
    closed = Node()
    gone = weakref.ref(closed)
    heap.settle()
    del closed  # a session closed while frozen: garbage nobody collects yet
    assert not heap.tick(live_sessions=9, closed_total=1)  # 1 of 10 closed: below 25 %, kept frozen
    assert gone() is not None
    assert heap.tick(live_sessions=2, closed_total=1)  # 1 of 3: thaw, collect, freeze the rest again
    assert gone() is None and heap.thaws == 1
    assert not heap.tick(live_sessions=2, closed_total=1)  # counted from the last thaw


def test_served_sessions_are_frozen_after_create_and_unfrozen_at_stop() -> None:
    server = create_server(server_config())
    try:
        with SimClient(f"127.0.0.1:{server.port}", timeout_s=30.0) as client:
            remote = client.create_session(seed=1)
            managed = server.manager.get(remote.id)
            assert not tracked(managed.session) and not tracked(managed.session.world)
            remote.step()
            remote.step()
            assert remote.step_index == 2
    finally:
        server.stop(grace_s=1.0)
    assert tracked(managed.session)


def test_without_gc_freeze_sessions_stay_in_the_collections() -> None:
    assert ServerConfig().gc_freeze is True
    server = create_server(server_config(gc_freeze=False))
    try:
        with SimClient(f"127.0.0.1:{server.port}", timeout_s=30.0) as client:
            remote = client.create_session(seed=1)
            assert tracked(server.manager.get(remote.id).session)
    finally:
        server.stop(grace_s=1.0)


def test_the_reaper_round_thaws_once_the_closed_sessions_pass_the_fraction() -> None:
    server = create_server(server_config(reap_interval_s=3600.0))
    try:
        with SimClient(f"127.0.0.1:{server.port}", timeout_s=30.0) as client:
            remotes = [client.create_session(seed=k) for k in range(4)]
            remotes[0].close()
            server.housekeeping()  # the reaper's round: 1 closed of 4 frozen sessions, not past 25 %
            assert server.heap.thaws == 0
            remotes[1].close()
            server.housekeeping()  # 2 closed since the last thaw, 2 live: past it
            assert server.heap.thaws == 1
            server.housekeeping()  # nothing closed since
            assert server.heap.thaws == 1
            assert all(not tracked(m.session) for m in server.manager.list())  # frozen again
    finally:
        server.stop(grace_s=1.0)
