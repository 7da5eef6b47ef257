"""MeanFlow: the JVP against finite differences, conditioning held exactly, seeded sampling, training."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from vectorworld.generation.learned.egr_dit import DiTConfig, EGRDiT
from vectorworld.generation.learned.meanflow import (
    MeanFlowConfig,
    meanflow_loss,
    midpoint_target,
    noisy_latents,
    sample_flow_matching,
    sample_meanflow,
    sample_times,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")

CONFIG = DiTConfig(latent=4, max_lanes=3, max_agents=2, dim=32, depth=2, heads=2, edge_dim=8)


def _model_and_inputs(seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    model = EGRDiT(CONFIG).double()
    with torch.no_grad():  # leave the zero-init regime so the JVP is non-trivial
        for p in model.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=gen, dtype=p.dtype))
    cond = torch.tensor([[True, False, False, True, False], [True, True, False, False, False]])
    edges = torch.zeros(2, 3, 3, dtype=torch.long)
    edges[:, 0, 1] = 2
    x = torch.randn(2, 5, 4, generator=gen, dtype=torch.float64)
    return model, cond, edges, x


def test_jvp_matches_finite_differences() -> None:
    model, cond, edges, x = _model_and_inputs()
    gen = torch.Generator().manual_seed(1)
    eps = torch.randn(x.shape, generator=gen, dtype=x.dtype)
    t = torch.tensor([0.7, 0.4], dtype=x.dtype)
    r = torch.tensor([0.2, 0.1], dtype=x.dtype)
    z, v = noisy_latents(x, eps, t, cond)

    def fn(z_, r_, t_):
        return model(z_, r_, t_, cond, edges)

    _, dudt = torch.func.jvp(fn, (z, r, t), (v, torch.zeros_like(r), torch.ones_like(t)))
    h = 1e-6
    fd = (fn(z + h * v, r, t + h) - fn(z - h * v, r, t - h)) / (2 * h)
    torch.testing.assert_close(dudt, fd, rtol=1e-5, atol=1e-7)
    assert dudt.abs().max() > 1e-4


def test_sample_times_ordering_and_ratio() -> None:
    r, t = sample_times(4000, MeanFlowConfig(interval_ratio=0.25, one_step_ratio=0.0, exact_one_step_ratio=0.0),
                        torch.Generator().manual_seed(0))
    assert (r <= t).all() and (r >= 0).all() and (t <= 1).all()
    share = (r < t).double().mean().item()
    assert 0.2 < share < 0.3
    r, t = sample_times(100, MeanFlowConfig(flow_matching_only=True), torch.Generator().manual_seed(0))
    assert torch.equal(r, t)


def test_logit_normal_pairs_alone_miss_the_one_step_interval() -> None:
    """Why one_step_ratio exists: the one-step sampler queries u(z_1, 0, 1), which these pairs never reach."""
    pairs = MeanFlowConfig(one_step_ratio=0.0, exact_one_step_ratio=0.0)
    r, t = sample_times(200_000, pairs, torch.Generator().manual_seed(0))
    assert ((t - r) > 0.9).double().mean().item() < 1e-4


def test_uniform_pairs_train_the_halves_the_midpoint_target_queries() -> None:
    """(0.5, 1), the late half of the one-step interval: logit-normal pairs almost never draw t near 1."""
    only_pairs = MeanFlowConfig(interval_ratio=1.0, one_step_ratio=0.0, exact_one_step_ratio=0.0)
    late_half = {}
    for pairs in ("logit_normal", "uniform"):
        r, t = sample_times(100_000, replace(only_pairs, pairs=pairs), torch.Generator().manual_seed(0))
        assert (r <= t).all() and (r >= 0).all() and (t <= 1).all()
        late_half[pairs] = ((t > 0.95) & (r > 0.4) & (r < 0.6)).double().mean().item()
    assert late_half["logit_normal"] < 1e-3 < 1e-2 < late_half["uniform"]
    with pytest.raises(ValueError, match="MeanFlowConfig.pairs"):
        MeanFlowConfig(pairs="beta")


def test_one_step_share_samples_the_one_step_interval() -> None:
    config = MeanFlowConfig(interval_ratio=0.25, one_step_ratio=0.25, one_step_t_min=0.5, exact_one_step_ratio=0.0)
    r, t = sample_times(20_000, config, torch.Generator().manual_seed(0))
    assert (r <= t).all() and (r >= 0).all() and (t <= 1).all()
    long = (r == 0) & (t >= 0.5)
    assert 0.23 < long.double().mean().item() < 0.27
    assert ((t - r) > 0.95).double().mean().item() > 0.02         # the one-step interval itself is trained
    assert 0.45 < (r == t).double().mean().item() < 0.55
    r, t = sample_times(100, replace(config, flow_matching_only=True), torch.Generator().manual_seed(0))
    assert torch.equal(r, t)


def test_one_step_share_zero_keeps_the_old_pairs() -> None:
    """Checkpoints trained before the option keep an exactly reproducible recipe."""
    gen = torch.Generator().manual_seed(4)
    a = torch.sigmoid(-0.4 + torch.randn(500, generator=gen))
    b = torch.sigmoid(-0.4 + torch.randn(500, generator=gen))
    same = torch.rand(500, generator=gen) >= 0.25
    expected_t = torch.maximum(a, b)
    expected_r = torch.where(same, expected_t, torch.minimum(a, b))
    r, t = sample_times(500, MeanFlowConfig(one_step_ratio=0.0, exact_one_step_ratio=0.0),
                        torch.Generator().manual_seed(4))
    assert torch.equal(r, expected_r) and torch.equal(t, expected_t)


def test_default_shares_train_the_one_step_interval_itself() -> None:
    """The default sampler: 40% r = t, 25% logit-normal intervals, 25% long (0, t >= 0.5), 10% exactly (0, 1)."""
    r, t = sample_times(20_000, MeanFlowConfig(), torch.Generator().manual_seed(1))
    assert (r <= t).all() and (r >= 0).all() and (t <= 1).all()
    exact = ((r == 0) & (t == 1)).double().mean().item()
    assert 0.09 < exact < 0.11
    assert 0.38 < (r == t).double().mean().item() < 0.42
    assert 0.33 < ((r == 0) & (t >= 0.5)).double().mean().item() < 0.37


def test_samplers_hold_condition_exactly_and_are_seeded() -> None:
    model, cond, edges, x = _model_and_inputs()
    model = model.float()
    x = x.float()

    def fn(z, r, t):
        return model(z, r, t, cond, edges)

    for sampler, steps in ((sample_meanflow, 1), (sample_meanflow, 3), (sample_flow_matching, 4)):
        a = sampler(fn, x, cond, steps, torch.Generator().manual_seed(5))
        b = sampler(fn, x, cond, steps, torch.Generator().manual_seed(5))
        c = sampler(fn, x, cond, steps, torch.Generator().manual_seed(6))
        assert torch.equal(a, b)
        assert not torch.equal(a[~cond], c[~cond])
        assert torch.equal(a[cond], x[cond])


def test_condition_tokens_carry_no_loss() -> None:
    model, cond, edges, x = _model_and_inputs()

    def fn(z, r, t):
        return model(z, r, t, cond, edges)

    def fn_bad_on_condition(z, r, t):
        return fn(z, r, t) + 100.0 * cond[..., None]

    a, _ = meanflow_loss(fn, x, cond, MeanFlowConfig(), torch.Generator().manual_seed(3))
    b, _ = meanflow_loss(fn_bad_on_condition, x, cond, MeanFlowConfig(), torch.Generator().manual_seed(3))
    torch.testing.assert_close(a, b)
    z, v = noisy_latents(x, torch.ones_like(x), torch.tensor([0.5, 0.5], dtype=x.dtype), cond)
    assert torch.equal(v[cond], torch.zeros_like(v[cond])) and torch.equal(z[cond], x[cond])


def _gaussian_average_velocity(z: torch.Tensor, r: torch.Tensor, t: torch.Tensor, scale: float = 0.3
                               ) -> torch.Tensor:
    """Exact average velocity over [r, t] for data N(0, scale^2) per dimension and unit noise: the flow
    map is z_r = (sigma_r / sigma_t) z_t with sigma_t = sqrt((1 - t)^2 scale^2 + t^2)."""
    def sigma(s: torch.Tensor) -> torch.Tensor:
        return torch.sqrt((1 - s) ** 2 * scale ** 2 + s ** 2)[:, None, None]
    return z * (1 - sigma(r) / sigma(t)) / (t - r)[:, None, None]


def test_midpoint_target_holds_the_exact_average_velocity_and_moves_any_other() -> None:
    gen = torch.Generator().manual_seed(4)
    z = torch.randn(3, 5, 4, generator=gen, dtype=torch.float64)
    r = torch.tensor([0.0, 0.2, 0.5], dtype=z.dtype)
    t = torch.tensor([1.0, 0.9, 0.6], dtype=z.dtype)
    cond = torch.zeros(3, 5, dtype=torch.bool)
    exact = _gaussian_average_velocity(z, r, t)
    torch.testing.assert_close(midpoint_target(_gaussian_average_velocity, z, r, t, cond), exact)

    def instantaneous_everywhere(z_, r_, t_):  # the velocity at t used for the whole interval
        return _gaussian_average_velocity(z_, t_ - 1e-6, t_)
    moved = midpoint_target(instantaneous_everywhere, z, r, t, cond) - exact
    assert moved.abs().max() > 1e-2


@pytest.mark.parametrize("shares", [{"one_step_ratio": 0.6, "exact_one_step_ratio": 0.2},
                                    {"exact_one_step_ratio": -0.1}])
def test_time_shares_that_are_no_split_of_the_batch_are_named(shares: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="exact_one_step_ratio"):
        MeanFlowConfig(**shares)


def test_shares_that_fill_the_batch_are_no_error() -> None:
    MeanFlowConfig(interval_ratio=0.33, one_step_ratio=0.56, exact_one_step_ratio=0.11)   # sums past 1 in floats


def test_a_larger_exact_share_trains_the_one_step_interval_that_much_more() -> None:
    config = MeanFlowConfig(one_step_ratio=0.3, exact_one_step_ratio=0.2)
    r, t = sample_times(20_000, config, torch.Generator().manual_seed(2))
    assert 0.19 < ((r == 0) & (t == 1)).double().mean().item() < 0.21
    assert 0.23 < (r == t).double().mean().item() < 0.27


def test_unknown_flow_target_is_named() -> None:
    with pytest.raises(ValueError, match="MeanFlowConfig.target"):
        MeanFlowConfig(target="euler")


@pytest.mark.parametrize("target", ["jvp", "midpoint"])
def test_meanflow_training_reduces_one_step_error(target: str) -> None:
    """Tiny overfit: fixed clean latents with conditioning; the 1-step sample error must drop."""
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = EGRDiT(CONFIG)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(1, 5, 4, generator=gen).expand(8, -1, -1).contiguous()
    cond = torch.tensor([True, False, False, True, False]).expand(8, -1)
    edges = torch.zeros(8, 3, 3, dtype=torch.long)

    def fn(z, r, t):
        return model(z, r, t, cond, edges)

    def one_step_error() -> float:
        with torch.no_grad():
            out = sample_meanflow(fn, x, cond, 1, torch.Generator().manual_seed(9))
        return float(((out - x)[~cond] ** 2).mean())

    before = one_step_error()
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    for _ in range(80):
        loss, _ = meanflow_loss(fn, x, cond, MeanFlowConfig(interval_ratio=0.5, target=target), gen)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert one_step_error() < 0.5 * before


def test_port_hints_start_without_effect_and_change_output_once_trained() -> None:
    config = DiTConfig(latent=4, max_lanes=3, max_agents=2, dim=32, depth=1, heads=2, edge_dim=8, port_hints=True)
    model = EGRDiT(config)
    with torch.no_grad():
        model.out.weight.normal_(0.0, 0.1)
    z = torch.randn(1, 5, 4, generator=torch.Generator().manual_seed(0))
    cond = torch.tensor([[True, False, False, False, False]])
    edges = torch.zeros(1, 3, 3, dtype=torch.long)
    hints = torch.zeros(1, 3, 6)
    hints[0, 1] = torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 0.0])
    r, t = torch.zeros(1), torch.ones(1)
    torch.testing.assert_close(model(z, r, t, cond, edges, hints=hints), model(z, r, t, cond, edges))
    with torch.no_grad():
        model.hint_in.weight.normal_(0.0, 0.1)
    assert not torch.allclose(model(z, r, t, cond, edges, hints=hints), model(z, r, t, cond, edges))


def test_edge_terms_are_the_projected_pair_embeddings() -> None:
    """Bias and gate of every token pair: the kind, condition-pair and edge-type embeddings summed, projected,
    the gate as 2 sigmoid (looked up per pair category; the same terms as projecting every pair)."""
    torch.manual_seed(3)
    dit = EGRDiT(CONFIG)
    for p in dit.parameters():
        torch.nn.init.normal_(p)
    b, n, n_l = 2, CONFIG.max_lanes + CONFIG.max_agents, CONFIG.max_lanes
    cond = torch.tensor([[True, False, True, False, True], [False, True, True, True, False]])
    edges = torch.randint(0, 5, (b, n_l, n_l))
    agent = torch.arange(n) >= n_l
    kind = agent[:, None].long() * 2 + agent[None].long()
    cpair = (~cond[:, :, None]).long() * 2 + (~cond[:, None]).long()
    etype = torch.full((b, n, n), 5)
    etype[:, :n_l, :n_l] = torch.where(cond[:, :n_l, None] & cond[:, None, :n_l], edges, 5)
    e = dit.edge_kind(kind)[None] + dit.edge_cond(cpair) + dit.edge_type(etype)
    terms = dit.edge_proj(e).view(b, n, n, CONFIG.depth, 2, CONFIG.heads).permute(4, 0, 3, 5, 1, 2)
    bias, gate = dit.edge_terms(cond, edges)
    assert bias.shape == gate.shape == (b, CONFIG.depth, CONFIG.heads, n, n)
    assert torch.allclose(bias, terms[0], atol=1e-5) and torch.allclose(gate, 2 * torch.sigmoid(terms[1]), atol=1e-6)
    gate.sum().backward()
    assert dit.edge_type.weight.grad.abs().sum() > 0
