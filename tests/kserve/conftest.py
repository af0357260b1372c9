"""Fixtures of the v2 (KServe gRPC) tests: stubs generated at test time from
heterod's own .proto with Debian's protoc and grpc_python_plugin, as any
client that has never seen heterod would make them, and the real heterod
started on temporary sockets with the v2 listener on.

The build (tests/kserve/meson.build) says where things are through the
environment: HETEROD, HETERO (the CLI), KSERVE_PROTO, DEMO_MODEL,
PYTHON_TEST_MODELS, DAEMON_TEST_MODELS, KSERVE_TEST_MODELS and HETERO_LIB
(for the native client, python/heterod)."""

from __future__ import annotations

import importlib
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import grpc
import pytest

HETEROD = os.environ["HETEROD"]
HETERO = os.environ["HETERO"]
PROTO = Path(os.environ["KSERVE_PROTO"])
DEMO = Path(os.environ["DEMO_MODEL"])
MODELS = Path(os.environ["PYTHON_TEST_MODELS"])
DAEMON_MODELS = Path(os.environ["DAEMON_TEST_MODELS"])
KSERVE_MODELS = Path(os.environ["KSERVE_TEST_MODELS"])

# Every test directory is readable by the unprivileged user (uid 65534) the
# access test runs a client as.
ROOT = Path(tempfile.mkdtemp(prefix="heterod-kserve-"))
ROOT.chmod(0o755)

# Larger than any test message, smaller than the oversized one.
MAX_MESSAGE = 8 << 20
CHANNEL_OPTIONS = [("grpc.max_receive_message_length", 64 << 20), ("grpc.max_send_message_length", 64 << 20)]


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    shutil.rmtree(ROOT, ignore_errors=True)


@dataclass
class Stubs:
    pb: ModuleType      # messages
    rpc: ModuleType     # GRPCInferenceServiceStub
    config: ModuleType  # model_config.proto's messages and DataType (Triton's)
    dir: Path


@pytest.fixture(scope="session")
def v2() -> Stubs:
    """Python stubs of daemon/kserve/grpc_predict_v2.proto and the
    model_config.proto it imports (Triton's ModelConfig), side by side."""
    out = ROOT / "stubs"
    out.mkdir()
    subprocess.run(["protoc", f"--proto_path={PROTO.parent}", f"--python_out={out}", f"--grpc_python_out={out}",
                    f"--plugin=protoc-gen-grpc_python={shutil.which('grpc_python_plugin')}", str(PROTO),
                    str(PROTO.parent / "model_config.proto")], check=True)
    for f in out.iterdir():
        f.chmod(0o644)
    sys.path.insert(0, str(out))
    stem = PROTO.stem
    return Stubs(importlib.import_module(f"{stem}_pb2"), importlib.import_module(f"{stem}_pb2_grpc"),
                 importlib.import_module("model_config_pb2"), out)


class Daemon:
    """heterod on sockets in its own directory, with a config of the test's."""

    def __init__(self, name: str, config: str, address_space: int | None = None) -> None:
        self.dir = ROOT / name
        self.dir.mkdir(mode=0o755)
        self.socket = str(self.dir / "heterod.sock")
        self.v2_socket = str(self.dir / "v2.sock")
        self.config = self.dir / "heterod.yaml"
        self.config.write_text(config.replace("@DIR@", str(self.dir)).replace("@SOCKET@", self.socket)
                               .replace("@V2_SOCKET@", self.v2_socket))
        self.log = self.dir / "heterod.log"
        def limit() -> None:
            if address_space:
                resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))

        # meson test's MALLOC_PERTURB_ makes pages resident that the daemon
        # never touches, and its RSS figures stop being its own.
        env = {**os.environ, "MALLOC_PERTURB_": "0"}
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen([HETEROD, "--config", str(self.config)], stderr=log, env=env,
                                            preexec_fn=limit)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_log(self, text: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while text not in self.log_text():
            if self.process.poll() is not None:
                raise RuntimeError(f"heterod exited with {self.process.returncode}:\n{self.log_text()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"heterod did not log {text!r} within {timeout} s:\n{self.log_text()}")
            time.sleep(0.05)
        return self.log_text()

    def channel(self) -> grpc.Channel:
        return grpc.insecure_channel(f"unix:{self.v2_socket}", options=CHANNEL_OPTIONS)

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.terminate()
        return self.process.wait(timeout=60)


@pytest.fixture(scope="module")
def start_daemon() -> Iterator[Any]:
    """Starts heterod with a config (@DIR@, @SOCKET@, @V2_SOCKET@ filled in),
    under an address-space limit if given, and waits for its v2 listener;
    stops it (expecting exit 0) after the module."""
    started: list[Daemon] = []

    def start(name: str, config: str, ready_log: str = "v2 (KServe gRPC) listening",
              address_space: int | None = None) -> Daemon:
        d = Daemon(name, config, address_space)
        started.append(d)
        d.wait_log(ready_log)
        d.wait_log("serving ")
        return d

    yield start
    for d in started:
        code = d.stop()
        assert code == 0, f"heterod exits 0 on SIGTERM, not {code}:\n{d.log_text()}"
