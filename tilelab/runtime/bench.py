"""``do_bench``: the time of a function in milliseconds, as ``triton.testing.do_bench`` takes it.

GPU work is timed between CUDA events with the L2 cache flushed before each run; host work
with ``perf_counter``. It lives in the runtime because the autotuner times its candidate
configurations with it; ``tilelab.testing`` re-exports it for Triton's spelling. The CUDA
modules are imported inside the GPU helpers: ``import tilelab`` does not load the driver
wrapper, and host timing never needs it.

    >>> do_bench(lambda: None, warmup=1, rep=1) >= 0
    True
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np

RETURN_MODES = ("min", "max", "mean", "median", "all")
DEVICES = (None, "cpu", "cuda")
FLUSH_BYTES = 256 * 1024 * 1024  # larger than any GPU's L2: writing it evicts the kernel's data
MAX_GPU_REPS = 10_000

_gpu_cache: dict = {}  # the L2 flush buffer and a pool of CUDA events, reused across calls


def _measure(fn, n: int) -> list[float]:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return times


def do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean", device=None):
    """Time ``fn()`` in milliseconds: about ``warmup`` ms of warm-up runs, then about ``rep`` ms of timed runs.

    ``quantiles=[0.5, 0.2, 0.8]`` returns those quantiles instead; ``return_mode`` is
    ``"min"``, ``"max"``, ``"mean"``, ``"median"`` or ``"all"`` (every time).

    GPU work is timed like Triton does: CUDA events around each run, the L2 cache flushed
    before each (a 256 MB memset), so a kernel's time is its own and not the host's. That
    happens with ``device="cuda"``, or by default when ``fn`` (or the last launch before it)
    launched a tilelab kernel on the cuda target; ``device="cpu"`` times on the host.

        ms = do_bench(lambda: add[grid](x, y, out, n, BLOCK=1024), return_mode="median")
    """
    if return_mode not in RETURN_MODES:
        raise ValueError(f"do_bench: return_mode must be one of {RETURN_MODES}, got {return_mode!r}")
    if device not in DEVICES:
        raise ValueError(f"do_bench: device must be 'cpu', 'cuda' or None, got {device!r}")
    if device is None:
        device = _device_of(fn)
    if device == "cuda":
        times = _gpu_times(fn, warmup, rep, grad_to_none)
    else:
        estimate = statistics.median(_measure(fn, 3))
        _measure(fn, max(1, int(warmup / max(estimate, 1e-6))))
        times = _measure(fn, max(1, min(int(rep / max(estimate, 1e-6)), 100_000)))
    return _summary(times, quantiles, return_mode)


def _summary(times: list[float], quantiles, return_mode: str):
    if quantiles is not None:
        result = np.quantile(np.array(times), quantiles).tolist()
        return result[0] if len(result) == 1 else result
    if return_mode == "all":
        return times
    return float(getattr(np, return_mode)(times))


def _device_of(fn) -> str:
    """``"cuda"`` when a CUDA context exists and a tilelab kernel was launched on the cuda target.

    ``fn`` runs once here (a first call also compiles), so a launch it makes counts too.
    Host code timed in a process that also launches on the GPU needs ``device="cpu"``.
    """
    from tilelab.runtime import cuda_driver
    from tilelab.runtime.cuda_target import CudaLauncher

    fn()
    has_context = cuda_driver._state.get("context") is not None
    return "cuda" if has_context and CudaLauncher.launches > 0 else "cpu"


def _events(n: int) -> list:
    """``n`` (start, end) CUDA event pairs, from a pool that grows as needed."""
    from tilelab.runtime.cuda_driver import Event

    pool = _gpu_cache.setdefault("events", [])
    while len(pool) < n:
        pool.append((Event(), Event()))
    return pool[:n]


def _flush_l2(stream: int) -> None:
    from tilelab.runtime import cuda_driver

    if "flush" not in _gpu_cache:
        _gpu_cache["flush"] = cuda_driver.mem_alloc(FLUSH_BYTES)
    cuda_driver.memset_d8(_gpu_cache["flush"], 0, FLUSH_BYTES, stream)


def _stream() -> int:
    """The stream the timed launches go on: torch's current one once torch has set CUDA up (a launch
    over torch tensors goes there, ``arrays.stream_reader``), else the legacy default stream."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return int(torch.cuda.current_stream(0).cuda_stream)
    return 0


def _clear_grads(grad_to_none) -> None:
    for x in grad_to_none or ():
        x.grad = None


def _gpu_times(fn, warmup: float, rep: float, grad_to_none) -> list[float]:
    """Per-run milliseconds of ``fn()`` between CUDA events, the L2 flushed before each run."""
    from tilelab.runtime import cuda_driver

    fn()
    cuda_driver.synchronize()
    stream = _stream()
    (start, end), *_ = _events(1)
    start.record(stream)
    for _ in range(5):
        _flush_l2(stream)
        fn()
    end.record(stream)
    estimate = max(cuda_driver.Event.elapsed_ms(start, end) / 5, 1e-4)
    for _ in range(max(1, int(warmup / estimate))):
        fn()
    pairs = _events(max(1, min(int(rep / estimate), MAX_GPU_REPS)))
    for start, end in pairs:
        _clear_grads(grad_to_none)
        _flush_l2(stream)
        start.record(stream)
        fn()
        end.record(stream)
    cuda_driver.synchronize()
    return [cuda_driver.Event.elapsed_ms(start, end) for start, end in pairs]
