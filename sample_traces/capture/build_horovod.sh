#!/usr/bin/env bash
# Build a real Horovod 0.28.1 (PyTorch, Gloo, CPU only) in a scratch venv: the runtime of capture.py.
#
#   sample_traces/capture/build_horovod.sh [VENV_DIR]     (default: ~/.cache/hvd-analyze/horovod-venv)
#
# Horovod 0.28.1 is the newest release; it pins C++14, and torch >= 2.1 headers need C++17
# (fixed upstream after 0.28.1, unreleased), so the two CMakeLists are switched to C++17 here.
# About 6-8 minutes on 2 cores. Idempotent: an existing working venv is kept.
set -euo pipefail
VENV=${1:-$HOME/.cache/hvd-analyze/horovod-venv}
TORCH=${TORCH_VERSION:-2.13.0}
if [ -x "$VENV/bin/horovodrun" ] && "$VENV/bin/horovodrun" --check-build 2>/dev/null | grep -q "\[X\] PyTorch"; then
    echo "horovod already built in $VENV"; exit 0
fi
command -v cmake >/dev/null || { echo "cmake is needed (apt-get install -y cmake g++)" >&2; exit 1; }
python3 -m venv "$VENV"
"$VENV/bin/pip" install -q "torch==$TORCH" wheel packaging psutil pyyaml cloudpickle numpy cffi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
"$VENV/bin/pip" download -q --no-deps --no-binary :all: horovod==0.28.1 -d "$WORK"
tar xzf "$WORK"/horovod-0.28.1.tar.gz -C "$WORK"
cd "$WORK/horovod-0.28.1"
sed -i 's/set(CMAKE_CXX_STANDARD 14)/set(CMAKE_CXX_STANDARD 17)/' CMakeLists.txt horovod/torch/CMakeLists.txt
grep -q "CMAKE_CXX_STANDARD 17" horovod/torch/CMakeLists.txt
HOROVOD_WITH_PYTORCH=1 HOROVOD_WITHOUT_TENSORFLOW=1 HOROVOD_WITHOUT_MXNET=1 HOROVOD_WITHOUT_MPI=1 \
HOROVOD_WITH_GLOO=1 HOROVOD_CPU_OPERATIONS=gloo MAKEFLAGS=-j"$(nproc)" \
    "$VENV/bin/pip" install -q --no-build-isolation --no-deps --no-cache-dir .
"$VENV/bin/horovodrun" --check-build
