"""`pip install ./python` as a user runs it (in a virtual environment that
sees the system's NumPy, offline), and the library found without HETERO_LIB
from a source tree."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import DEMO

SOURCE_ROOT = Path(os.environ["SOURCE_ROOT"])
BUILD_ROOT = Path(os.environ["BUILD_ROOT"])

PROGRAM = f"""
import heterod, numpy as np
print(heterod.__file__)
print(heterod.library_path())
with heterod.Core() as core:
    compiled = core.compile_model({str(DEMO)!r}, shapes={{"image": (1, 3, 32, 32)}})
    print(compiled.infer(np.zeros((1, 3, 32, 32), np.float32))["probabilities"].shape)
    try:  # the pooled request keeps nothing of the call before: a missing input raises, as in ONNX Runtime
        compiled.infer({{}})
    except ValueError as e:
        print(type(e).__name__, e.message)
"""


def run(python: Path | str, env: dict[str, str], cwd: Path) -> list[str]:
    r = subprocess.run([str(python), "-c", PROGRAM], env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def test_pip_install(tmp_path: Path) -> None:
    # A copy: building writes build/ and *.egg-info next to pyproject.toml.
    source = shutil.copytree(SOURCE_ROOT / "python", tmp_path / "src", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", tmp_path / "venv"],
                   check=True, timeout=120)
    python = tmp_path / "venv" / "bin" / "python"
    r = subprocess.run([python, "-m", "pip", "install", "--no-build-isolation", "--no-index", "--quiet", source],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    site = next((tmp_path / "venv" / "lib").glob("python3*/site-packages"))
    assert (site / "heterod" / "py.typed").is_file()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    module, library, shape, missing = run(python, env, tmp_path)
    assert Path(module).is_relative_to(site)
    assert os.path.samefile(library, os.environ["HETERO_LIB"])
    assert shape == "(1, 10)"
    assert missing.startswith("InvalidArgumentError required inputs are missing: 'image'")


def test_library_of_the_source_tree(tmp_path: Path) -> None:
    """Without HETERO_LIB, the package imported from a tree loads that tree's build."""
    if BUILD_ROOT.resolve() != (SOURCE_ROOT / "build").resolve():
        pytest.skip(f"the build is not the tree's build/ ({BUILD_ROOT})")
    env = {k: v for k, v in os.environ.items() if k != "HETERO_LIB"}
    env["PYTHONPATH"] = str(SOURCE_ROOT / "python")
    _, library, shape, _ = run(sys.executable, env, tmp_path)
    assert os.path.samefile(library, BUILD_ROOT / "capi" / "libhetero.so.0")
    assert shape == "(1, 10)"
