"""The real heterod on a temporary socket, for pytest suites: started with a
config serving the given models, ready when every model is, stopped with
SIGTERM (and expected to exit 0)."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import heterod

# name: (model path, fixed input shapes or None)
Models = Mapping[str, "tuple[Path, Optional[Mapping[str, Sequence[int]]]]"]


@dataclass
class Daemon:
    socket: str
    process: subprocess.Popen[bytes]
    log: Path

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def config_text(socket: str, models: Models, model_dirs: Sequence[Path] = (),
                extra: Optional[Mapping[str, str]] = None) -> str:
    """The config; `extra` adds YAML to a model's entry by name ("defaults: {m: 3}")."""
    lines = [f"socket: {{path: {socket}}}", f"model_dirs: [{', '.join(str(d) for d in model_dirs)}]", "models:"]
    for name, (path, shapes) in models.items():
        shape_text = ", shapes: {" + ", ".join(f"{k}: {list(v)}" for k, v in shapes.items()) + "}" if shapes else ""
        more = f", {extra[name]}" if extra and name in extra else ""
        lines.append(f"  - {{name: {name}, path: {path}, parallel: 4{shape_text}{more}}}")
    return "\n".join(lines) + "\n"


@contextmanager
def running_daemon(tmp: Path, models: Models, model_dirs: Sequence[Path] = (),
                   extra: Optional[Mapping[str, str]] = None) -> Iterator[Daemon]:
    """heterod ($HETEROD) serving `models` on a socket in `tmp`."""
    socket = str(tmp / "heterod.sock")
    config = tmp / "heterod.yaml"
    config.write_text(config_text(socket, models, model_dirs, extra))
    log = tmp / "heterod.log"
    with open(log, "wb") as log_file:
        process = subprocess.Popen([os.environ["HETEROD"], "--config", str(config)], stderr=log_file)
    daemon = Daemon(socket, process, log)
    try:
        deadline = time.monotonic() + 60
        while not _serving(daemon, len(models)):
            if process.poll() is not None:
                raise RuntimeError(f"heterod exited with {process.returncode}:\n{daemon.log_text()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"heterod did not serve its models within 60 s:\n{daemon.log_text()}")
            time.sleep(0.05)
        yield daemon
    finally:
        process.terminate()
        code = process.wait(timeout=60)
    assert code == 0, f"heterod exits 0 on SIGTERM, not {code}:\n{daemon.log_text()}"


def _serving(daemon: Daemon, count: int) -> bool:
    try:
        with heterod.Core.connect(daemon.socket) as core:
            models = core.models()
    except heterod.HeteroError:
        return False
    return len(models) == count and all(m.state == "ready" for m in models)
