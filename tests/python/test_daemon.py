"""A core connected to heterod: its models, loading and unloading, stats,
reload, and what only an in-process core (or only a daemon) can do."""

from __future__ import annotations

import json

import numpy as np
import pytest

import heterod
from conftest import DEMO, MODELS, SERVED, Daemon


def test_models(remote_core: heterod.Core) -> None:
    served = {m.name: m for m in remote_core.models()}
    assert set(SERVED) <= set(served)
    assert served["demo"] == heterod.ServedModel("demo", "CPU", "ready", "")
    with pytest.raises(heterod.HeteroError) as e:
        remote_core.open_model("nope")
    assert e.value.status == heterod.Status.NOT_FOUND and "'nope'" in e.value.message


def test_load_and_unload(remote_core: heterod.Core) -> None:
    x = np.zeros((1, 8), np.float32)
    remote_core.load_model("affine-by-path", MODELS / "affine.onnx")
    remote_core.load_model("affine-uploaded", (MODELS / "affine.onnx").read_bytes(), config={"num_threads": 1})
    try:
        for name in ("affine-by-path", "affine-uploaded"):
            with remote_core.open_model(name) as compiled:
                np.testing.assert_array_equal(compiled.infer(x)["y"], np.ones((1, 8), np.float32))
    finally:
        remote_core.unload_model("affine-by-path")
        remote_core.unload_model("affine-uploaded")
    assert "affine-by-path" not in {m.name for m in remote_core.models()}
    with pytest.raises(heterod.HeteroError) as e:
        remote_core.unload_model("affine-by-path")
    assert e.value.status == heterod.Status.NOT_FOUND
    with pytest.raises(heterod.HeteroError) as e:
        remote_core.load_model("outside", DEMO)  # not under the config's model_dirs
    assert e.value.status == heterod.Status.PERMISSION_DENIED and "model_dirs" in e.value.message


def test_stats_and_reload(remote_core: heterod.Core) -> None:
    with remote_core.open_model("demo") as compiled:
        compiled.infer(np.zeros((1, 3, 32, 32), np.float32))
    assert "demo" in remote_core.stats()
    stats = json.loads(remote_core.stats("json"))
    assert any(m["name"] == "demo" and m["requests"] >= 1 for m in stats["models"])
    assert 'heterod_requests_total{model="demo"}' in remote_core.stats("prometheus")
    remote_core.reload()
    assert {m.name for m in remote_core.models()} >= set(SERVED)


def test_in_process_only_and_daemon_only(remote_core: heterod.Core, local_core: heterod.Core) -> None:
    with pytest.raises(heterod.HeteroError) as e:
        remote_core.read_model(DEMO)
    assert e.value.status == heterod.Status.NOT_SUPPORTED
    # The hint names the Python methods, not the C functions behind them.
    assert "Core.load_model()" in e.value.message and "Core.open_model()" in e.value.message
    assert "hetero_" not in e.value.message
    with remote_core.open_model("demo") as compiled, pytest.raises(heterod.HeteroError) as e:
        compiled.export()
    assert e.value.status == heterod.Status.NOT_SUPPORTED
    with pytest.raises(heterod.HeteroError) as e:
        local_core.open_model("demo")
    assert e.value.status == heterod.Status.NOT_SUPPORTED and "daemon" in e.value.message


def test_connect(daemon: Daemon, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(heterod.HeteroError) as e:
        heterod.Core.connect(tmp_path / "nobody.sock")
    assert e.value.status == heterod.Status.CONNECTION_ERROR and "nobody.sock" in e.value.message
    assert isinstance(e.value, ConnectionError)
    monkeypatch.setenv("HETEROD_SOCKET", daemon.socket)
    with heterod.Core.connect() as core:  # the socket from the environment
        assert "demo" in {m.name for m in core.models()}
