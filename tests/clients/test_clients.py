"""docs/clients.md's programs, as a user builds and runs them: heterod
installed (meson install into a staging directory: the headers, hetero.pc,
the libraries and drivers), the C and C++ examples compiled against it with
`pkg-config --cflags --libs hetero` only, the raw-socket client with messages
compiled by protoc, and every client run in process and through a real
heterod: all print the same line, the in-process answer."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import heterod
from heterod_daemon import running_daemon

SOURCE_ROOT = Path(os.environ["SOURCE_ROOT"])
DEMO = Path(os.environ["DEMO_MODEL"])
EXAMPLES = SOURCE_ROOT / "examples"
PROGRAMS = {  # example: the language of its block in docs/clients.md
    "python/classify.py": "python",
    "cpp/classify.cpp": "cpp",
    "c/classify.c": "c",
    "raw/classify_raw.py": "python",
}


@dataclass
class Installed:
    root: Path  # the staging directory: <root>/<prefix>/...
    prefix: Path  # <root>/<prefix>
    libdir: Path
    env: dict[str, str]  # pkg-config and the dynamic linker pointed at the staged files


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    root = tmp_path_factory.mktemp("destdir")
    r = subprocess.run([os.environ["MESON"], "install", "-C", os.environ["BUILD_ROOT"], "--no-rebuild", "--quiet",
                        "--tags", "devel,runtime", "--destdir", str(root)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    (pc,) = root.glob("**/pkgconfig/hetero.pc")
    libdir = pc.parent.parent
    prefix = root / re.search(r"^prefix=/?(.*)$", pc.read_text(), re.M).group(1)
    env = dict(os.environ)
    env.update({
        # Only the staged .pc, with its paths under the staging directory.
        "PKG_CONFIG_LIBDIR": str(pc.parent),
        "PKG_CONFIG_SYSROOT_DIR": str(root),
        # Installed for real, the libraries' own paths (ld.so.conf, RUNPATH)
        # find these; staged, they are named here.
        "LD_LIBRARY_PATH": f"{libdir}:{libdir / 'heterod'}",
        "HETERO_DRIVER_PATH": str(libdir / "heterod" / "drivers"),
        "HETERO_LIB": str(libdir / "libhetero.so.0"),
    })
    return Installed(root, prefix, libdir, env)


def sh(command: str, env: dict[str, str], cwd: Path) -> str:
    r = subprocess.run(["sh", "-c", command], env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"{command}\n{r.stdout}{r.stderr}"
    return r.stdout


def test_installed_development_files(installed: Installed) -> None:
    include = installed.prefix / "include" / "hetero"
    for header in ("hetero.h", "hetero.hpp", "status.h"):
        assert (include / header).is_file(), f"{header} is installed"
    assert (installed.libdir / "libhetero.so").exists() and (installed.libdir / "libhetero.so.0").exists()
    env, cwd = installed.env, installed.root
    assert sh("pkg-config --modversion hetero", env, cwd).strip() == heterod.__version__
    assert f"-I{installed.prefix / 'include'}" in sh("pkg-config --cflags hetero", env, cwd).split()
    libs = sh("pkg-config --libs hetero", env, cwd).split()
    assert "-lhetero" in libs and f"-L{installed.libdir}" in libs


@pytest.fixture(scope="module")
def programs(installed: Installed, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """The command that runs each example, built as docs/clients.md says."""
    out = tmp_path_factory.mktemp("examples")
    env = installed.env
    # The build lines of the examples' own comments, warnings as errors.
    sh(f"c++ -std=c++20 -Wall -Wextra -Wpedantic -Werror {EXAMPLES / 'cpp/classify.cpp'} "
       "$(pkg-config --cflags --libs hetero) -o classify-cpp", env, out)
    sh(f"cc -std=c11 -Wall -Wextra -Wpedantic -Werror {EXAMPLES / 'c/classify.c'} "
       "$(pkg-config --cflags --libs hetero) -o classify-c", env, out)
    sh(f"protoc --proto_path={shlex.quote(str(Path(os.environ['WIRE_PROTO']).parent))} --python_out=. "
       f"{shlex.quote(os.environ['WIRE_PROTO'])}", env, out)
    return {
        "python/classify.py": ["/usr/bin/python3", str(EXAMPLES / "python/classify.py")],
        "cpp/classify.cpp": [str(out / "classify-cpp")],
        "c/classify.c": [str(out / "classify-c")],
        "raw/classify_raw.py": ["/usr/bin/python3", str(EXAMPLES / "raw/classify_raw.py")],
    }


@pytest.fixture(scope="module")
def expected() -> str:
    """The line every client prints: the demo model in process, through the package."""
    with heterod.Core() as core, core.compile_model(DEMO, shapes={"image": (1, 3, 32, 32)}) as model:
        p = model.infer(np.full((1, 3, 32, 32), 0.5, np.float32))["probabilities"][0]
    return f"class {int(p.argmax())}: {p.max():.6f}\n"


@pytest.fixture(scope="module")
def daemon_socket(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_daemon(tmp_path_factory.mktemp("heterod"), {"demo": (DEMO, {"image": (1, 3, 32, 32)})}) as d:
        yield d.socket


def run(command: list[str], installed: Installed, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(installed.env)
    env["PYTHONPATH"] = f"{SOURCE_ROOT / 'python'}:{cwd}"  # the package, and heterod_pb2 for the raw client
    return subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("example", PROGRAMS)
def test_example_through_heterod(example: str, programs: dict[str, list[str]], installed: Installed,
                                 daemon_socket: str, expected: str) -> None:
    cwd = Path(programs["cpp/classify.cpp"][0]).parent
    r = run(programs[example] + [daemon_socket], installed, cwd)
    assert (r.returncode, r.stdout) == (0, expected), r.stderr


@pytest.mark.parametrize("example", [e for e in PROGRAMS if not e.startswith("raw/")])
def test_example_in_process(example: str, programs: dict[str, list[str]], installed: Installed,
                            expected: str, tmp_path: Path) -> None:
    r = run(programs[example] + [str(DEMO)], installed, tmp_path)
    assert (r.returncode, r.stdout) == (0, expected), r.stderr
    r = run(programs[example] + [str(tmp_path / "nobody.sock")], installed, tmp_path)
    assert r.returncode == 1 and r.stderr == f"classify: cannot connect to heterod at {tmp_path / 'nobody.sock'}: " \
                                             "No such file or directory\n", r.stderr


@pytest.mark.parametrize("example", PROGRAMS)
def test_docs_show_the_programs_as_tested(example: str) -> None:
    doc = (SOURCE_ROOT / "docs" / "clients.md").read_text()
    text = (EXAMPLES / example).read_text()
    assert f"```{PROGRAMS[example]}\n{text}```" in doc, f"docs/clients.md shows examples/{example} as it is"
