"""Running emitted CUDA kernels on the CPU: a semantic check of the emitter without a GPU.

The CUDA C that ``codegen_cuda`` emits is compiled as C++ by the host compiler with a
small shim in front of it: ``__global__``/``__device__`` are empty, ``__shared__`` is
``static`` (one copy per kernel, shared by the threads of the block being run), the
vector types (``float4``, ``double2``...) are plain structs, and ``threadIdx``,
``blockIdx``, ``blockDim``, ``gridDim`` are globals set by the scheduler.  A launch runs
the blocks one after another; the threads of a block are coroutines (``ucontext``):
each runs until it reaches ``__syncthreads()`` (it switches back to the scheduler) or
returns, and the scheduler resumes every thread round by round, so a block advances in
phases between barriers exactly as CUDA's barrier semantics allow.  A block where some
threads return while others wait at a barrier is reported as an error (CUDA's undefined
behaviour of a divergent ``__syncthreads``).

What this checks: the kernels' indexing, grid-stride and block-stride loops, vector
loads and stores, the shared-memory tree reductions and their barriers, and the element
expressions, against the CPU backend's results.  What it cannot: anything of the real
GPU (memory model beyond barriers, warp scheduling, libdevice's functions: the host's
libm stands in for them).
"""
from __future__ import annotations

import ctypes
import hashlib
import math
import os
import shutil
import subprocess
import tempfile

import numpy as np

from pyjax._src.backends.gpu import codegen_cuda, host_steps
from pyjax._src.backends.cpu.compiler import plan
from pyjax._src.backends.cpu.compiler.ir import CONST, INPUT, Lit
from pyjax._src.backends.cpu.compiler.kernels import elementwise as elementwise_c

_SHIM = r"""/* pyjax: CUDA kernels run on the CPU (backends/gpu/emulate.py) */
#include <ucontext.h>
#include <stdlib.h>
#include <stdint.h>
struct pj_dim3 { unsigned x, y, z; };
static pj_dim3 threadIdx, blockIdx, blockDim, gridDim;
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(n)
#define __shared__ static
#define __restrict__ __restrict
#define PJ_VEC4(T, N) struct N { T x, y, z, w; }; \
  static inline N make_##N(T x, T y, T z, T w) { N v = {x, y, z, w}; return v; }
#define PJ_VEC2(T, N) struct N { T x, y; }; \
  static inline N make_##N(T x, T y) { N v = {x, y}; return v; }
PJ_VEC4(float, float4) PJ_VEC4(int, int4) PJ_VEC4(unsigned, uint4)
PJ_VEC2(double, double2) PJ_VEC2(long long, longlong2) PJ_VEC2(unsigned long long, ulonglong2)

static ucontext_t pj_sched, *pj_ctx;
static int pj_cur, *pj_done, pj_reverse;
/* 1: each round runs the threads in reverse order (code that is correct only in one
   order between two barriers -- a missing __syncthreads -- gives other results) */
extern "C" void pj_set_reverse(int r) { pj_reverse = r; }
static void (*pj_fn)(void);
static void __syncthreads(void) { swapcontext(&pj_ctx[pj_cur], &pj_sched); }
static void pj_entry(void) { pj_fn(); pj_done[pj_cur] = 1; }

/* run fn on grid x block threads; 0, or -1 when a barrier is not reached by every thread */
static int pj_run(void (*fn)(void), long grid, int block) {
  const size_t stack = 1 << 16;
  int rc = 0;
  pj_fn = fn;
  blockDim.x = block; blockDim.y = blockDim.z = 1;
  gridDim.x = grid; gridDim.y = gridDim.z = 1;
  blockIdx.y = blockIdx.z = threadIdx.y = threadIdx.z = 0;
  pj_ctx = (ucontext_t *)calloc(block, sizeof(ucontext_t));
  pj_done = (int *)calloc(block, sizeof(int));
  char *stacks = (char *)malloc(stack * block);
  for (long b = 0; b < grid && rc == 0; b++) {
    blockIdx.x = b;
    for (int t = 0; t < block; t++) {
      getcontext(&pj_ctx[t]);
      pj_ctx[t].uc_stack.ss_sp = stacks + stack * t;
      pj_ctx[t].uc_stack.ss_size = stack;
      pj_ctx[t].uc_link = &pj_sched;
      makecontext(&pj_ctx[t], pj_entry, 0);
      pj_done[t] = 0;
    }
    for (;;) {   /* one round: every live thread up to its next barrier or its end */
      int done = 0;
      for (int i = 0; i < block; i++) {
        const int t = pj_reverse ? block - 1 - i : i;
        if (pj_done[t]) { done++; continue; }
        pj_cur = t; threadIdx.x = t;
        swapcontext(&pj_sched, &pj_ctx[t]);
        if (pj_done[t]) done++;
      }
      if (done == block) break;
      if (done > 0) { rc = -1; break; }
    }
  }
  free(stacks); free(pj_done); free(pj_ctx);
  return rc;
}
"""


class EmulationError(RuntimeError):
  """An emulated launch found a barrier not reached by every thread of a block."""


def compiler():
  """The host C++ compiler (``c++``/``g++``/``clang++``), or None."""
  for cxx in (os.environ.get("CXX"), "c++", "g++", "clang++"):
    if cxx and shutil.which(cxx):
      return shutil.which(cxx)
  return None


def _launcher(k):
  """A C entry ``pj_launch_<name>(void **args, long grid, int block)`` for kernel ``k``."""
  casts = []
  for i, (v, is_out) in enumerate(k.params):
    st = elementwise_c.storage_type(v.dtype)
    casts.append(f"({'' if is_out else 'const '}{st} *)pj_a_{k.name}[{i}]")
  return (f"static void **pj_a_{k.name};\n"
          f"static void pj_b_{k.name}(void) {{ {k.name}({', '.join(casts)}); }}\n"
          f'extern "C" int pj_launch_{k.name}(void **args, long grid, int block) {{\n'
          f"  pj_a_{k.name} = args; return pj_run(pj_b_{k.name}, grid, block); }}\n")


def source(ks, block=codegen_cuda.BLOCK):
  """The C++ translation unit running kernels ``ks`` on the CPU."""
  return (shim(block) + codegen_cuda.module_source(ks) + "\n"
          + "".join(_launcher(k) for k in ks))


def shim(block=codegen_cuda.BLOCK):
  """The C++ text put before a CUDA module to compile it for the CPU."""
  return _SHIM + f"#define PJ_BLOCK {block}\n"


def build(ks, block=codegen_cuda.BLOCK):
  """Compile kernels ``ks`` for the CPU; the loaded ``ctypes.CDLL``."""
  return build_source(source(ks, block))


def launcher(name, dtypes):
  """The launch entry of kernel ``name`` whose pointer parameters hold ``dtypes``, for a
  module whose CudaKernels are not at hand (every pointer passed as writable)."""
  v = [(type("P", (), {"dtype": np.dtype(d)})(), True) for d in dtypes]
  return _launcher(codegen_cuda.CudaKernel(name, "", tuple(v), "map", 1, 1))


def build_source(src):
  """Compile the C++ translation unit ``src`` (``source``'s shape); the loaded CDLL."""
  cxx = compiler()
  if cxx is None:
    raise RuntimeError("no C++ compiler")
  d = tempfile.mkdtemp(prefix="pyjax_cuda_emu_")
  tag = hashlib.sha256(src.encode()).hexdigest()[:16]
  cpp, so = os.path.join(d, f"{tag}.cpp"), os.path.join(d, f"{tag}.so")
  with open(cpp, "w") as f:
    f.write(src)
  # the CPU compiler's float flags (no contraction, no fast math), FMA where it has it
  cmd = [cxx, "-std=gnu++20", "-O1", "-fPIC", "-shared", "-march=native",
         "-ffp-contract=off", "-fno-math-errno", "-fno-strict-aliasing", "-w", cpp,
         "-o", so, "-lm"]
  r = subprocess.run(cmd, capture_output=True, text=True)
  if r.returncode:
    raise RuntimeError(f"compiling the emulated kernels failed:\n{r.stderr[-4000:]}")
  lib = ctypes.CDLL(so)
  shutil.rmtree(d, ignore_errors=True)
  return lib


def run(closed, args, max_blocks=4, block=codegen_cuda.BLOCK, name="emu", reverse=False):
  """Run the CUDA kernels of ``closed`` (a ClosedJaxpr) on ``args`` (NumPy arrays) on
  the CPU: the program's outputs as NumPy arrays.  ``max_blocks`` caps the grid, so the
  kernels' stride loops run several iterations; ``reverse`` runs the threads of a block
  in reverse order between barriers.  Dot and host groups (no kernels) run the CPU
  compiler's NumPy steps, as cuBLAS/CuPy steps would stand between the kernels."""
  prog = codegen_cuda.lower(closed, name)
  lib = build(prog.kernels, block)
  lib.pj_set_reverse(ctypes.c_int(1 if reverse else 0))
  fu = prog.fu
  bufs = {}

  def buf(v):
    rv = plan.root(fu, v)
    b = bufs.get(rv)
    if b is None:
      if rv.kind == INPUT:
        b = np.ascontiguousarray(np.asarray(args[rv.index], rv.dtype))
      elif rv.kind == CONST:
        b = np.ascontiguousarray(rv.const, rv.dtype)
      else:
        b = np.empty(rv.shape, rv.dtype)
      bufs[rv] = b
    return b
  for g, k in prog.steps:
    if k is None:
      outs = host_steps.run(g.node, [buf(x) for x in g.node.ins if type(x) is not Lit])
      for o, v in zip(outs, g.node.outs):
        bufs[plan.root(fu, v)] = o
      continue
    ptrs = (ctypes.c_void_p * len(k.params))(*[buf(v).ctypes.data for v, _ in k.params])
    grid, _ = codegen_cuda.launch_config(k, max_blocks)
    if getattr(lib, f"pj_launch_{k.name}")(ptrs, ctypes.c_long(grid), ctypes.c_int(block)):
      raise EmulationError(f"{k.name}: a __syncthreads() not reached by every thread")
  outs = []
  for v in prog.program.outputs:
    if type(v) is Lit:
      outs.append(np.asarray(v.value, v.dtype))
    else:
      outs.append(buf(v).reshape(v.shape) if math.prod(v.shape) else np.empty(v.shape, v.dtype))
  return outs
