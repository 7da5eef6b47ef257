"""Per-tile work on a bounded number of math threads: torch's intra-op pool and numpy's BLAS.

numpy's OpenBLAS hands matrix products above a small size to a pool of worker threads that spin after each
call. The learned generator's filter makes hundreds of such products a tile: on the 2-core machine a filter
call took 10.5 ms with the pool against 7.2 ms on one thread while another process used the other core
(``tools/bench_filter.py``), and a quiet 200-tile evaluation spent 12.2-13.0 s of CPU against 9.1-9.5 s with
``OPENBLAS_NUM_THREADS=1`` (2026-12-07). torch's pool is
set with ``torch.set_num_threads``; numpy's through threadpoolctl. torch and threadpoolctl are imported on
first use.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from threadpoolctl import ThreadpoolController

_blas: ThreadpoolController | None = None


def _controller() -> ThreadpoolController:
    """The process's threadpool controller (it finds the loaded BLAS libraries once: about 1.5 ms)."""
    global _blas
    if _blas is None:
        from threadpoolctl import ThreadpoolController

        _blas = ThreadpoolController()
    return _blas


@contextmanager
def math_threads(limit: int | None) -> Iterator[None]:
    """Run the block with at most ``limit`` torch intra-op threads (a caller's lower setting stays) and
    ``limit`` BLAS threads for numpy, then restore the caller's settings; ``None`` leaves both as they are.
    The learned generator runs each tile in it, the ΔSim policy each step."""
    if limit is None:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(min(before, limit))
    try:
        with _controller().limit(limits=limit, user_api="blas"):
            yield
    finally:
        torch.set_num_threads(before)
