"""Port merge: a new lane whose end reached two ports merges the other one into it (or diverges into it)
instead of leaving that known lane a dead end beside it."""

from __future__ import annotations

import numpy as np
import pytest

from vectorworld import geometry
from vectorworld.generation.learned.filter_config import FrontierPort
from vectorworld.generation.learned.port_merge import merge_ports


def _line(a: tuple[float, float], b: tuple[float, float], n: int = 20) -> np.ndarray:
    return np.linspace(np.array(a), np.array(b), n)


def _port(index: int, xy: tuple[float, float], is_out: bool) -> FrontierPort:
    return FrontierPort(index, np.array(xy), 0.0, is_out)


def _length(points: np.ndarray) -> float:
    return float(geometry.polyline_lengths(points)[-1])


def test_a_second_out_port_at_a_lane_start_merges_into_the_lane() -> None:
    """Known lanes end at (0, 0) and (0, -2); the new lane starts on the first: the second gets a connector
    into the lane 8 m in, and every link is exact."""
    lane = _line((0.0, 0.0), (30.0, 0.0))
    ports = [_port(0, (0.0, 0.0), True), _port(1, (0.0, -2.0), True)]
    merged = merge_ports([lane], [], [(0, 0), (1, 0)], ports, 0.01)
    head, tail, connector = merged.lanes
    assert merged.source.tolist() == [0, 0, -1]
    np.testing.assert_allclose(head[[0, -1]], [[0.0, 0.0], [8.0, 0.0]], atol=1e-9)
    np.testing.assert_allclose(tail[[0, -1]], [[8.0, 0.0], [30.0, 0.0]], atol=1e-9)
    np.testing.assert_allclose(connector[[0, -1]], [[0.0, -2.0], [8.0, 0.0]], atol=1e-9)
    assert _length(head) + _length(tail) == pytest.approx(_length(lane))
    assert sorted(merged.successors) == [(0, 1), (2, 1)]
    assert sorted(merged.port_links) == [(0, 0), (1, 2)]


def test_a_second_in_port_at_a_lane_end_gets_a_diverging_connector_and_the_lane_keeps_its_links() -> None:
    before, lane = _line((-30.0, 0.0), (0.0, 0.0)), _line((0.0, 0.0), (30.0, 0.0))
    ports = [_port(0, (30.0, 0.0), False), _port(1, (30.0, 2.0), False)]
    merged = merge_ports([before, lane], [(0, 1)], [(0, 1), (1, 1)], ports, 0.01)
    head, tail, connector = merged.lanes[1:]
    np.testing.assert_allclose(tail[[0, -1]], [[22.0, 0.0], [30.0, 0.0]], atol=1e-9)
    np.testing.assert_allclose(connector[[0, -1]], [[22.0, 0.0], [30.0, 2.0]], atol=1e-9)
    np.testing.assert_allclose(head[-1], [22.0, 0.0], atol=1e-9)
    assert sorted(merged.successors) == [(0, 1), (1, 2), (1, 3)]
    assert sorted(merged.port_links) == [(0, 2), (1, 3)]


def test_a_port_another_lane_starts_on_is_not_merged() -> None:
    """Lanes a lane width apart: each lane's start reaches both ports, and each port has its own lane."""
    lanes = [_line((0.0, 0.0), (30.0, 0.0)), _line((0.0, -2.8), (30.0, -2.8))]
    ports = [_port(0, (0.0, 0.0), True), _port(1, (0.0, -2.8), True)]
    merged = merge_ports(lanes, [], [(0, 0), (1, 0), (0, 1), (1, 1)], ports, 0.01)
    assert len(merged.lanes) == 2 and merged.source.tolist() == [0, 1]
    assert sorted(merged.port_links) == [(0, 0), (1, 1)]


def test_a_port_no_drivable_connector_reaches_stays_open() -> None:
    """A 5 m lane has no room for an 8 m merge: it stays whole, and the second port stays unlinked."""
    lane = _line((0.0, 0.0), (5.0, 0.0))
    ports = [_port(0, (0.0, 0.0), True), _port(1, (0.0, -2.0), True)]
    merged = merge_ports([lane], [], [(0, 0), (1, 0)], ports, 0.01)
    assert len(merged.lanes) == 1 and merged.port_links == [(0, 0)]
