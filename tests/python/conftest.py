"""Fixtures of the Python package's tests: the runtime in process, and the
real heterod started on a temporary socket serving the same models, so that
most tests run against both (the `target` fixture).

The build (tests/python/meson.build) says where things are through the
environment: HETERO_LIB (libhetero.so.0), HETEROD (the daemon), DEMO_MODEL,
PYTHON_TEST_MODELS (make_python_models' directory) and DAEMON_TEST_MODELS
(tests/daemon's, for slow.onnx)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import heterod
from heterod_daemon import Daemon, running_daemon

MODELS = Path(os.environ.get("PYTHON_TEST_MODELS", "."))
DAEMON_MODELS = Path(os.environ.get("DAEMON_TEST_MODELS", "."))
DEMO = Path(os.environ.get("DEMO_MODEL", "demo.onnx"))
DEMO_SHAPES = {"image": (1, 3, 32, 32)}

# name: (path, input shapes); the daemon serves them under these names.
SERVED = {
    "demo": (DEMO, DEMO_SHAPES),
    "dtypes": (MODELS / "dtypes.onnx", None),
    "affine": (MODELS / "affine.onnx", None),
    "passthrough": (MODELS / "passthrough.onnx", None),
    "accumulate": (MODELS / "accumulate.onnx", None),
    "lstm_step": (MODELS / "lstm_step.onnx", None),
    "lstm_sequence": (MODELS / "lstm_sequence.onnx", None),
    "slow": (DAEMON_MODELS / "slow.onnx", None),
    "spin": (DAEMON_MODELS / "spin.onnx", None),
}


@pytest.fixture(scope="session")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    """heterod serving SERVED on a temporary socket, for the whole session."""
    with running_daemon(tmp_path_factory.mktemp("heterod"), SERVED, model_dirs=[MODELS]) as d:
        yield d


@pytest.fixture(scope="session")
def local_core() -> Iterator[heterod.Core]:
    with heterod.Core() as core:
        yield core


@pytest.fixture(scope="session")
def remote_core(daemon: Daemon) -> Iterator[heterod.Core]:
    with heterod.Core.connect(daemon.socket) as core:
        yield core


@dataclass
class Target:
    """A core and how it gets a model by name: compiled in process, or the
    daemon's served model."""

    kind: str
    core: heterod.Core
    open: Callable[[str], heterod.CompiledModel]


@pytest.fixture(scope="session", params=["in-process", "daemon"])
def target(request: pytest.FixtureRequest) -> Target:
    if request.param == "in-process":
        core: heterod.Core = request.getfixturevalue("local_core")
        return Target("in-process", core, lambda name: core.compile_model(SERVED[name][0], shapes=SERVED[name][1]))
    core = request.getfixturevalue("remote_core")
    return Target("daemon", core, core.open_model)
