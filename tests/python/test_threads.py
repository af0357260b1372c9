"""Many threads, many requests: every answer must be the one for its own input."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from conftest import Target

THREADS = 16
REQUESTS_PER_THREAD = 100


def x_for(thread: int, i: int) -> np.ndarray:
    # Distinct per (thread, i), and 2x + 1 is exact in float32 for these values.
    return (np.arange(8, dtype=np.float32) + 8 * (thread * REQUESTS_PER_THREAD + i)).reshape(1, 8)


def test_threads_share_a_compiled_model(target: Target) -> None:
    """Each thread calls CompiledModel.infer (pooled requests) and, in turn,
    its own request; all at once."""
    with target.open("affine") as compiled:
        start = threading.Barrier(THREADS)

        def worker(thread: int) -> int:
            start.wait()
            wrong = 0
            with compiled.create_infer_request() as own:
                for i in range(REQUESTS_PER_THREAD):
                    x = x_for(thread, i)
                    y = (compiled.infer(x) if i % 2 else own.infer({"x": x}))["y"]
                    wrong += not np.array_equal(y, 2 * x + 1)
            return wrong

        with ThreadPoolExecutor(THREADS) as pool:
            wrong = list(pool.map(worker, range(THREADS)))
    assert wrong == [0] * THREADS


def test_threads_share_one_request(target: Target) -> None:
    """A request shared by threads serves them in turn, each its own answer."""
    with target.open("affine") as compiled, compiled.create_infer_request() as shared:
        def worker(thread: int) -> int:
            wrong = 0
            for i in range(REQUESTS_PER_THREAD // 4):
                x = x_for(thread, i)
                wrong += not np.array_equal(shared.infer(x)["y"], 2 * x + 1)
            return wrong

        with ThreadPoolExecutor(8) as pool:
            assert list(pool.map(worker, range(8))) == [0] * 8
