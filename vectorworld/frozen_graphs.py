"""Small models as frozen TorchScript graphs: the per-op dispatch cost of eager PyTorch dominates a network of
a few hundred tiny ops on one CPU thread (the ΔSim scorer, the learned generator's one-step sampler).

:func:`freeze_trace` records a module once on example inputs and freezes it (weights become constants);
:func:`static_runtime` runs that graph under PyTorch's Static Runtime (planned memory, preallocated outputs,
the same outputs) where the torch build has it. A Static Runtime module cannot be pickled: holders drop it
when pickled and rebuild it on first use. torch is imported lazily, by the callers that need it.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


def freeze_trace(module: torch.nn.Module, args: tuple[torch.Tensor, ...]) -> torch.jit.ScriptModule:
    """``module`` (in eval mode) traced on ``args`` and frozen. The graph holds no data-dependent Python
    control flow of the module's, so it must have none that matters for other inputs."""
    import torch

    with torch.no_grad(), warnings.catch_warnings():
        # TorchScript is deprecated upstream but still shipped; tests compare the traces with eager mode.
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        return torch.jit.freeze(torch.jit.trace(module.eval(), args, check_trace=False))


def static_runtime(traced: torch.jit.ScriptModule) -> torch.jit.ScriptModule | torch._C.StaticModule:
    """A frozen trace under Static Runtime (same call signature, bit-identical outputs), or the trace itself
    where this torch build lacks it."""
    import torch

    to_static = getattr(torch._C, "_jit_to_static_module", None)
    return traced if to_static is None else to_static(traced._c)
