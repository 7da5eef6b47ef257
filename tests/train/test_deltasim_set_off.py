"""Set-off oversampling in DeltaSim's behaviour cloning (``TrainConfig.start_weight``)."""

from __future__ import annotations

import numpy as np

from vectorworld.train.deltasim_training import SET_OFF_M, epoch_order, set_off_samples


class _Samples:
    """The two fields the epoch order reads, for a handful of samples."""

    def __init__(self, speed: list[float], dx: list[float]) -> None:
        self.speed = np.array(speed, np.float32)
        self.motion = np.zeros((len(speed), 3), np.float32)
        self.motion[:, 0] = dx

    def __len__(self) -> int:
        return len(self.speed)


def test_set_off_samples_are_standing_agents_the_teacher_moves() -> None:
    samples = _Samples(speed=[0.0, 0.0, 0.05, 3.0, 0.0], dx=[0.0, 0.01, 2 * SET_OFF_M, 0.3, SET_OFF_M / 2])
    # standing and staying; standing, set off; standing, set off; moving; standing, creeping below the bar
    assert set_off_samples(samples).tolist() == [1, 2]


def test_epoch_draws_set_off_samples_start_weight_times_and_the_rest_once() -> None:
    samples = _Samples(speed=[0.0, 0.0, 5.0, 0.0, 2.0], dx=[0.02, 0.0, 0.5, 0.01, 0.2])
    order = epoch_order(np.random.default_rng(0), samples, start_weight=4)
    counts = np.bincount(order, minlength=len(samples))
    assert counts.tolist() == [4, 1, 1, 4, 1]


def test_weight_one_is_the_plain_permutation_of_the_shipped_recipe() -> None:
    samples = _Samples(speed=[0.0] * 50, dx=[0.02] * 50)
    order = epoch_order(np.random.default_rng(7), samples, start_weight=1)
    assert order.tolist() == np.random.default_rng(7).permutation(50).tolist()
