#!/usr/bin/env bash
# The GPU check (docs/gpu.md), for a session that has an NVIDIA GPU: installs CuPy for the
# driver's CUDA major version and the NVRTC extra, then runs the GPU tests (pytest -m gpu:
# transfers, the memory pool, every test program's kernels on the GPU against the CPU
# backend), the emitter's CPU-side tests and the GPU benchmark against JAX on the same
# card.  Budget: under 8 minutes (installs ~1-2 min, tests ~1 min, benchmark ~1 min).
# Usage: bash .ci/gpu_check.sh   (in the repository, with the Python that has JAX+CUDA)
set -uo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
# JAX (the benchmark's comparison) would otherwise take 75% of the GPU at start-up
export XLA_PYTHON_CLIENT_PREALLOCATE=false
SECONDS=0
rc=0
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || { echo "no GPU"; exit 1; }
cuda_major=$(nvidia-smi | sed -n 's/.*CUDA Version: *\([0-9][0-9]*\)\..*/\1/p' | head -1)
extra=cuda12
if [ "${cuda_major:-12}" -ge 13 ]; then extra=cuda13; fi
echo "driver CUDA ${cuda_major:-?}"
"$PY" -m pip list 2>/dev/null | grep -i -E "^(jax|jaxlib|jax-cuda|cupy|cuda-bindings|nvidia-cuda-nvrtc)" || true
# The device machine may have no network: install only what does not import yet (a
# session can carry wheels in the work tree, e.g. wheels/*.whl, up to the carry limit)
# pyjax from this checkout without installing it (an offline editable install would need
# setuptools from the index for its isolated build)
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
"$PY" -c "import pyjax" || rc=1
if ! "$PY" -c "import cupy" 2>/dev/null; then
  echo "CuPy missing: installing pyjax[$extra]"
  timeout 240 "$PY" -m pip install -q --retries 1 --timeout 15 --find-links wheels "cupy-cuda${extra#cuda}x" || rc=1
fi
if ! "$PY" -c "from cuda.bindings import nvrtc" 2>/dev/null; then
  timeout 120 "$PY" -m pip install -q --retries 1 --timeout 15 --find-links wheels "cuda-bindings>=13" "nvidia-cuda-nvrtc>=13" \
    || echo "no NVRTC extra: the NVRTC tests skip (CuPy compiles with its own NVRTC)"
fi
"$PY" -c "import pytest" 2>/dev/null || timeout 60 "$PY" -m pip install -q --retries 1 --timeout 15 pytest || rc=1
# CuPy finds the CUDA libraries of JAX's nvidia-* wheels or the system toolkit; without
# either, its [ctk] extra brings them
if ! timeout 60 "$PY" -c "import cupy; cupy.arange(3).sum().item()"; then
  echo "CuPy cannot run a kernel: installing its CUDA libraries ([ctk])"
  timeout 240 "$PY" -m pip install -q --retries 1 --timeout 15 "cupy-cuda${extra#cuda}x[ctk]" || rc=1
fi
echo "installs: ${SECONDS}s"
timeout 150 "$PY" -m pytest -q -p no:cacheprovider -m gpu tests/gpu -rs || rc=1
echo "gpu tests: ${SECONDS}s"
timeout 90 "$PY" -m pytest -q -p no:cacheprovider tests/gpu/test_compiler_cuda.py || rc=1
echo "emitter tests: ${SECONDS}s"
timeout 120 "$PY" benchmarks/gpu.py --rounds 20 || rc=1
echo "total: ${SECONDS}s, status $rc"
exit $rc
