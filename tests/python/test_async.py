"""asyncio inference: awaited results, many in flight, errors, a busy request,
cancellation, and an event loop that keeps running meanwhile."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

import heterod
from conftest import Target


def affine_inputs(n: int) -> list[np.ndarray]:
    return [np.arange(8, dtype=np.float32).reshape(1, 8) + 10 * i for i in range(n)]


def test_infer_async(target: Target) -> None:
    async def main() -> None:
        with target.open("affine") as compiled, compiled.create_infer_request() as request:
            for x in affine_inputs(3):  # one request, awaited in turn
                np.testing.assert_array_equal((await request.infer_async(x))["y"], 2 * x + 1)
            # Many in flight at once on pooled requests, each answer its own.
            xs = affine_inputs(64)
            results = await asyncio.gather(*(compiled.infer_async({"x": x}) for x in xs))
            for x, result in zip(xs, results):
                np.testing.assert_array_equal(result["y"], 2 * x + 1)

    asyncio.run(main())


def test_async_errors(target: Target) -> None:
    async def main() -> None:
        with target.open("affine") as compiled, compiled.create_infer_request() as request:
            with pytest.raises(heterod.HeteroError) as e:
                await request.infer_async()  # nothing bound: fails in the inference
            assert "'x'" in e.value.message
            if target.kind == "in-process":  # the daemon checks shapes when the request arrives
                with pytest.raises(heterod.HeteroError) as e:
                    await request.infer_async(np.zeros((3, 8), np.float32))
                assert e.value.status == heterod.Status.INVALID_ARGUMENT
            x = affine_inputs(1)[0]
            np.testing.assert_array_equal((await request.infer_async(x))["y"], 2 * x + 1)

    asyncio.run(main())


def test_busy_request_and_cancellation(target: Target) -> None:
    x = np.full((1, 256, 256), 1 / 256, np.float32)

    async def main() -> None:
        with target.open("slow") as compiled, compiled.create_infer_request() as request:
            first = asyncio.ensure_future(request.infer_async(x))
            await asyncio.sleep(0)  # let it start
            assert request.busy
            with pytest.raises(heterod.HeteroError) as e:
                await request.infer_async(x)
            assert e.value.status == heterod.Status.BUSY
            expected = (await first)["y"]
            assert not request.busy
            # A cancelled await cancels the inference (test_cancel.py); the
            # request is busy until it has ended, then usable again.
            task = asyncio.ensure_future(request.infer_async(x))
            await asyncio.sleep(0)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            while request.busy:
                await asyncio.sleep(0.001)
            np.testing.assert_array_equal((await request.infer_async(x))["y"], expected)

    asyncio.run(main())


def test_event_loop_runs_during_inference(target: Target) -> None:
    x = np.full((1, 256, 256), 1 / 256, np.float32)

    async def main() -> int:
        ticks = 0
        done = False

        async def ticker() -> None:
            nonlocal ticks
            while not done:
                ticks += 1
                await asyncio.sleep(0)

        with target.open("slow") as compiled:
            tick_task = asyncio.ensure_future(ticker())
            for _ in range(5):
                await compiled.infer_async(x)
            done = True
            await tick_task
        return ticks

    assert asyncio.run(main()) > 5, "the loop ran other tasks while inferences were in flight"


def test_loop_closed_before_completion(target: Target) -> None:
    """An inference whose loop has gone finishes anyway and frees its request."""
    x = np.full((1, 256, 256), 1 / 256, np.float32)
    with target.open("slow") as compiled:
        request = compiled.create_infer_request()
        loop = asyncio.new_event_loop()
        task = loop.create_task(request.infer_async(x))
        loop.run_until_complete(asyncio.sleep(0))
        task.cancel()
        loop.run_until_complete(asyncio.sleep(0))
        loop.close()
        request.close()  # waits for the inference
        assert request.closed
