"""CUDA C emission for the jit compiler's fused loop groups.

The pipeline is the CPU compiler's (``backends/cpu/compiler``: jaxpr -> ``ir.Program`` ->
simplify -> fuse -> schedule, ``driver.lower_parts``); this module turns each *loop group*
into one ``extern "C" __global__`` kernel.  The element expressions are the CPU
compiler's (``kernels/elementwise.py``'s rules: one C expression per element, XLA's
integer and NaN semantics), and the value DAG is walked by the CPU ``KernelGen``
(memoization per (value, index), affine index maps); only the iteration structure is
CUDA's:

- *map* groups (no reduction): a grid-stride loop over the group's index space (its
  dimensions coalesced as on CPU).  When every memory access walks the space
  contiguously (or reads one element), the element type is 4 or 8 bytes and the size is a
  multiple of the vector width, each thread handles ``VEC`` consecutive elements with one
  vector load per operand (``float4``, ``double2``, ``int4``...) and one vector store per
  output; a launcher passes pointers from the allocator, which are 256-byte aligned.
- *row* groups (reductions over trailing axes, e.g. softmax, layer norm): one block per
  row (a block-stride loop over the rows); per phase each thread accumulates a strided
  part of the row, then a shared-memory tree (``PJ_BLOCK`` threads, a power of two)
  combines the partials; every thread reads the result, so the next phase (e.g. exp(x -
  max), then the normalized row) continues in the same kernel.  Reduced-shape outputs are
  written by thread 0.
- *column* groups (kept axes after the reduced ones): one thread per output element, a
  sequential loop over the reduced axes (neighbouring threads read neighbouring columns).

Transcendental functions are the CPU compiler's own vector math (``kernels/vmath.py``,
branch-free C) compiled as ``__device__`` functions, with fused multiply-adds where it
asks for them and ``--fmad=false`` otherwise, so exp, log, tanh, logistic, erf, sin/cos
(float32), pow... give the CPU backend's bits; functions vmath does not define (float64
sin/cos/tan/erf, atan2, ...) are CUDA's libdevice ones (glibc's on CPU: within a few ulp).
Float sums and products are combined in the tree's order, not XLA's CPU order: they
round differently from the CPU backend (within the usual summation error).

Supported dtypes: bool, int8..int64, uint8..uint64, float32, float64 (not the half types).
``Unsupported`` is raised for primitives without a CUDA rule (``lgamma``,
``population_count``, ``clz``) and for dot/host groups, which the GPU backend runs with
cuBLAS/CuPy.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from pyjax._src.backends.cpu.compiler import driver as _driver
from pyjax._src.backends.cpu.compiler import fusion, plan
from pyjax._src.backends.cpu.compiler.codegen_c import KernelGen
from pyjax._src.backends.cpu.compiler.kernels import elementwise as elementwise_c
from pyjax._src.backends.cpu.compiler.kernels import vmath

BLOCK = 256          # threads per block (the row kernels' tree assumes a power of two)
VEC_BYTES = 16       # one vector load: float4 / double2 / int4 / longlong2

_DTYPES = frozenset(np.dtype(t) for t in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
    np.uint64, np.float32, np.float64))
_NO_CUDA_RULE = frozenset({"lgamma", "population_count", "clz"})

# vector types of VEC_BYTES bytes by element size, and their lane fields
_VEC_TYPE = {4: ("float4", "int4", "uint4"), 8: ("double2", "longlong2", "ulonglong2")}
_LANES = "xyzw"


class Unsupported(Exception):
  """A program (or group) the CUDA emitter does not lower."""


class CudaKernel(NamedTuple):
  """One emitted kernel: ``name``, ``source`` (the ``__global__`` function, without the
  prelude), ``params`` ((value, is_output) per pointer parameter, in order), ``kind``
  ("map", "row" or "col"), ``work`` (threads needed: elements / VEC for map kernels,
  rows for row kernels, output elements for column kernels) and ``vec`` (elements per
  thread of a vectorized map kernel, else 1).  Launch with ``BLOCK`` threads per block."""
  name: str
  source: str
  params: tuple
  kind: str
  work: int
  vec: int


# --- the prelude ------------------------------------------------------------------------
_CUDA_HEAD = r"""/* pyjax CUDA prelude (backends/gpu/codegen_cuda.py) */
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
typedef signed char int8_t; typedef short int16_t; typedef int int32_t; typedef long long int64_t;
typedef unsigned char uint8_t; typedef unsigned short uint16_t; typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#define INFINITY __int_as_float(0x7f800000)
#define NAN __int_as_float(0x7fc00000)
#define PJ_DEVFN static __device__ __forceinline__
#define PJ_DEVTAB static __device__ const
/* every NVIDIA GPU fuses multiply-adds: vmath's explicit fmaf/fma, as on an FMA CPU */
#define __FP_FAST_FMAF 1
#define __FP_FAST_FMA 1
#else   /* compiled as C++ on the CPU (emulate.py defines __global__, threadIdx, ...) */
#include <stdint.h>
#include <string.h>
#include <math.h>
#define PJ_DEVFN static inline
#define PJ_DEVTAB static const
#endif
#ifndef PJ_BLOCK
#define PJ_BLOCK 256
#endif
"""


def prelude():
  """The CUDA C text every module starts with: integer and float helpers and the vector
  math of the CPU compiler, as device functions."""
  helpers = (elementwise_c._INT_HELPERS + elementwise_c._FLOAT_HELPERS).replace(
      "static inline ", "PJ_DEVFN ")
  vm = (vmath.prelude_defines(False) + vmath.SOURCE).replace(
      "#define PJ_VM static inline __attribute__((always_inline))", "#define PJ_VM PJ_DEVFN")
  vm = vm.replace("static const double pj_2opi_c", "PJ_DEVTAB double pj_2opi_c")
  return _CUDA_HEAD + helpers + vm


# --- kernels ----------------------------------------------------------------------------
def lambdas(expr):
  """``expr`` with GNU statement expressions ``({ s1; ...; e; })`` (the CPU rules use
  them; NVRTC does not take them) as immediately invoked lambdas ``[&]() { s1; ...;
  return e; }()``, nested ones included."""
  start = expr.find("({")
  if start < 0:
    return expr
  depth, i = 0, start + 1
  while True:   # the brace closing the statement expression's block
    c = expr[i]
    depth += c == "{"
    depth -= c == "}"
    if depth == 0:
      break
    i += 1
  body = lambdas(expr[start + 2:i].strip())
  assert body.endswith(";") and expr[i + 1] == ")", expr
  # the last statement: after the last ';' outside braces, before the final one
  depth, cut = 0, -1
  for j, c in enumerate(body[:-1]):
    depth += (c == "{") - (c == "}")
    if c == ";" and depth == 0:
      cut = j
  stmts, last = body[:cut + 1], body[cut + 1:-1].strip()
  return (expr[:start] + f"([&]() {{ {stmts} return {last}; }}())"
          + lambdas(expr[i + 2:]))


class CudaKernelGen(KernelGen):
  """The CPU kernel generator's value DAG walk with CUDA's iteration structure."""

  def __init__(self, fu, group, slot_root, name):
    super().__init__(fu, group, slot_root, name)
    self.vec = 1
    self.vec_loads = None    # vectorized map: root value -> local array name

  def declare(self, key, ctype, expr, depth):
    return super().declare(key, ctype, lambdas(expr), depth)

  # -- map ---------------------------------------------------------------------------------
  def _vector_width(self, forms, groups):
    """Elements per thread of a vectorized map kernel (1: scalar)."""
    if len(groups) != 1:
      return 1
    (dims,) = groups
    last = dims[-1]
    sizes = {v.dtype.itemsize for v in list(self.g.outputs) + self._loaded_values()}
    if len(sizes) != 1 or sizes.pop() not in _VEC_TYPE:
      return 1
    vec = VEC_BYTES // self.g.outputs[0].dtype.itemsize
    total = math.prod(self.shape)
    if total % vec or total < vec * BLOCK:
      return 1
    for f in forms:   # each access: contiguous along the space, or one element
      c = f[1 + last]
      if any(f[1 + d] for d in range(self.r) if d not in dims):
        return 1
      if c not in (0, 1) or (c == 1 and f[0] % vec):
        return 1
    return vec

  def _loaded_values(self):
    return [x for x in self.fu.reads(self.g)]

  def _cuda_map(self):
    forms, _ = self._leaf_forms(self._emit_map_body)
    groups = self._coalesce(range(self.r), forms)
    if not groups:
      self.groups = []
      self.open(None, "if (blockIdx.x == 0 && threadIdx.x == 0) {")
      self._emit_map_body()
      self.launch_work = 1
      return self.close_all()
    ext = [math.prod(self.shape[d] for d in grp) for grp in groups]
    total = math.prod(ext)
    self.vec = self._vector_width(forms, groups)
    if self.vec > 1:
      return self._vector_map(groups[0], total)
    self.launch_work = total
    self.groups = [(grp, f"m{i}", 1) for i, grp in enumerate(groups)]
    self.open(None, f"for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; "
                    f"t < {total}LL; t += (int64_t)gridDim.x * blockDim.x) {{")
    for ln in self._decompose("t", [(f"m{i}", e) for i, e in enumerate(ext)]):
      self.line(ln)
    self._emit_map_body()
    return self.close_all()

  def _vector_map(self, dims, total):
    """Each thread: VEC consecutive elements, one vector load per contiguous operand."""
    vec = self.vec
    nvec = total // vec
    self.launch_work = nvec
    self.groups = [(dims, "m0", 2)]
    self.vec_loads = {}
    self.open(None, f"for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; "
                    f"t < {nvec}LL; t += (int64_t)gridDim.x * blockDim.x) {{")
    self._vec_stores = []
    self.open("#pragma unroll", f"for (int l = 0; l < {vec}; l++) {{")
    self.line(f"const int64_t m0 = t * {vec} + l;")
    self._emit_map_body()
    self.close()
    for ln in self._vec_stores:
      self.line(ln)
    return self.close_all()

  def _vec_type(self, d):
    kind = 0 if elementwise_c.is_float(d) else (1 if d.kind == "i" else 2)
    return _VEC_TYPE[d.itemsize][kind]

  def _load(self, x, off_form, key):
    if self.vec_loads is None or self.collect is not None or not any(off_form[1:]):
      return super()._load(x, off_form, key)
    # a contiguous operand of a vectorized kernel: one vector load per thread (before the
    # lane loop), the lane's element read from the loaded registers
    rx = (self.slot_root(x), off_form[0])
    arr = self.vec_loads.get(rx)
    if arr is None:
      arr = self.vec_loads[rx] = self.fresh("vl")
      vt, st = self._vec_type(x.dtype), elementwise_c.storage_type(x.dtype)
      lanes = ", ".join(f"({st}){arr}_v.{_LANES[i]}" for i in range(self.vec))
      self.line(f"const {vt} {arr}_v = reinterpret_cast<const {vt} *>({self.ptr(x)})"
                f"[t + {off_form[0] // self.vec}];", 1)
      self.line(f"const {st} {arr}[{self.vec}] = {{{lanes}}};", 1)
    expr = elementwise_c.load(x.dtype, f"{arr}[l]")
    return self.declare(key, elementwise_c.compute_type(x.dtype), expr, self.depth)

  def store(self, v, forms, expr_depth):
    if self.vec_loads is None or self.collect is not None:
      return super().store(v, forms, expr_depth)
    arr = f"vs{len(self._vec_stores)}"
    d = v.dtype
    vt, st = self._vec_type(d), elementwise_c.storage_type(d)
    self.line(f"{st} {arr}[{self.vec}];", 1)
    self.line(f"{arr}[l] = {elementwise_c.store(d, expr_depth[0])};")
    fields = ", ".join(f"{arr}[{i}]" for i in range(self.vec))
    self._vec_stores.append(f"reinterpret_cast<{vt} *>({self.ptr(v)})[t] = "
                            f"make_{vt}({fields});")

  # -- row and column ----------------------------------------------------------------------
  def _open_rows(self, header):
    """Open the loop over the kept dims (``header`` names ``o`` and is formatted with
    their count); returns (reduced dims, full-size outputs, reduced-size outputs)."""
    g = self.g
    kept = g.kept()
    for k in kept:
      self.dimexpr[k] = (f"i{k}", 1)
    n_outer = math.prod(self.shape[k] for k in kept)
    self.launch_work = n_outer
    self.open(None, header.format(n=n_outer))
    for ln in self._decompose("o", [(f"i{k}", self.shape[k]) for k in kept]):
      self.line(ln)
    red = list(g.axes)
    full_outs, outer_outs = [], []
    for v, m in self._outputs():
      fvars = fusion.form_vars(self._out_forms(m))
      (full_outs if fvars & set(red) else outer_outs).append((v, m))
    return red, full_outs, outer_outs

  def _reduce(self, red, reds, outs, header, block):
    """One pass over the reduced dims (``header`` opens the loop over their linear index
    ``r``): the reductions ``reds`` accumulate, the full-size outputs ``outs`` are
    stored; ``block``: the threads' partials are combined in shared memory after it."""
    full = self._full_forms()
    accs = {m: self.fresh("acc") for m in reds}
    for m in reds:
      self._init_acc(m, accs[m])
    inner = [k for k in red if self.shape[k] != 1]
    for k in red:
      if self.shape[k] == 1:
        self.dimexpr[k] = ("0", 0)
    n_red = math.prod(self.shape[k] for k in red)
    self.open(None, header.format(n=n_red))
    for ln in self._decompose("r", [(f"i{k}", self.shape[k]) for k in inner]) if inner else []:
      self.line(ln)
    for k in inner:
      self.dimexpr[k] = (f"i{k}", self.depth)
    for m in reds:
      self._accumulate(m, accs[m], full)
    for v, m in outs:
      forms = self._out_forms(m)
      self.store(v, forms, self.value(v, forms))
    self.close()
    for m in reds:
      if block:
        self._block_tree(m, accs[m])
      self._finish_acc(m, accs[m])

  def _cuda_row(self):
    """One block per row: a block-stride loop over the rows, a phase per dependent
    reduction, reduced-size outputs by thread 0."""
    red, full_outs, outer_outs = self._open_rows(
        "for (int64_t o = blockIdx.x; o < {n}LL; o += gridDim.x) {{")
    phase = self._phases()
    reductions = [m for m in self.g.members if self.fu.kind[m] == fusion.REDUCE]
    nphase = max([phase[m] for m in reductions] + [0])
    out_phase = {v: min(phase[m] + 1, nphase + 1) for v, m in full_outs}
    for ph in range(1, nphase + 2):
      reds = [m for m in reductions if phase[m] == ph]
      outs = [(v, m) for v, m in full_outs if out_phase[v] == ph]
      if reds or outs:
        self._reduce(red, reds, outs,
                     "for (int64_t r = threadIdx.x; r < {n}LL; r += blockDim.x) {{", True)
    if outer_outs:
      self.open(None, "if (threadIdx.x == 0) {")
      for v, m in outer_outs:   # (stored in the block: by thread 0 alone)
        forms = self._out_forms(m)
        self.store(v, forms, (self.value(v, forms)[0], self.depth))
      self.close()
    return self.close_all()

  def _block_tree(self, m, acc):
    """Combine the threads' partial ``acc`` in shared memory; every thread gets the result."""
    x = m.ins[0]
    ct = elementwise_c.compute_type(x.dtype)
    arg = m.prim in ("argmax", "argmin")
    # one shared scratch serves every tree of the kernel: each tree ends with a barrier
    # after its result is read, so the next one may overwrite it (4 KiB per block)
    self.line(f"{ct} *const {acc}_s = reinterpret_cast<{ct} *>(pj_shared);")
    if arg:
      self.line(f"int64_t *const {acc}_si = pj_shared_i;")
      self.line(f"{acc}_si[threadIdx.x] = {acc}_i;")
    self.line(f"{acc}_s[threadIdx.x] = {acc};")
    self.line("__syncthreads();")
    self.line("for (int s = PJ_BLOCK / 2; s > 0; s >>= 1) {")
    a, b = f"{acc}_s[threadIdx.x]", f"{acc}_s[threadIdx.x + s]"
    if arg:
      ai, bi = f"{acc}_si[threadIdx.x]", f"{acc}_si[threadIdx.x + s]"
      op = ">" if m.prim == "argmax" else "<"
      # the partner's candidate wins when it is better, or equal (or both NaN) with a
      # smaller index: the first index of the extreme value, a NaN counting as extreme
      if elementwise_c.is_float(x.dtype):
        nan_a, nan_b = f"({a} != {a})", f"({b} != {b})"
        take = (f"({nan_b} && !{nan_a}) || (!{nan_a} && !{nan_b} && {b} {op} {a}) || "
                f"((({nan_a} && {nan_b}) || {b} == {a}) && {bi} < {ai})")
      else:
        take = f"{b} {op} {a} || ({b} == {a} && {bi} < {ai})"
      self.line(f"  if (threadIdx.x < s && ({take})) {{ {a} = {b}; {ai} = {bi}; }}")
    else:
      self.line(f"  if (threadIdx.x < s) {a} = {elementwise_c.combine(m.prim, x.dtype, a, b)};")
    self.line("  __syncthreads();")
    self.line("}")
    self.line(f"{acc} = {acc}_s[0];")
    if arg:
      self.line(f"{acc}_i = {acc}_si[0];")
    self.line("__syncthreads();")

  def _cuda_col(self):
    """One thread per reduced-size element, a sequential loop over the reduced dims."""
    red, full_outs, outer_outs = self._open_rows(
        "for (int64_t o = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; o < {n}LL; "
        "o += (int64_t)gridDim.x * blockDim.x) {{")
    reductions = [m for m in self.g.members if self.fu.kind[m] == fusion.REDUCE]
    phase = self._phases()
    if max([phase[m] for m in reductions] + [0]) > 1:
      raise Unsupported("a column reduction depending on another")
    self._reduce(red, reductions, full_outs, "for (int64_t r = 0; r < {n}LL; r++) {{", False)
    for v, m in outer_outs:
      forms = self._out_forms(m)
      self.store(v, forms, self.value(v, forms))
    return self.close_all()

  # -- the kernel --------------------------------------------------------------------------
  def generate_cuda(self):
    kind = self.g.form_kind
    body = {"map": self._cuda_map, "row": self._cuda_row, "col": self._cuda_col}[kind]()
    outs = {self.slot_root(v) for v in self.g.outputs}
    params = []
    for rv in self.params:
      st = elementwise_c.storage_type(rv.dtype)
      q = "" if rv in outs else "const "
      params.append(f"{q}{st} *__restrict__ {self.pnames[rv]}")
    src = [f'extern "C" __global__ void __launch_bounds__(PJ_BLOCK) {self.name}('
           f'{", ".join(params)}) {{']
    if kind == "row":   # the block trees' scratch (8-byte slots hold every dtype)
      src += ["  __shared__ uint64_t pj_shared[PJ_BLOCK];",
              "  __shared__ int64_t pj_shared_i[PJ_BLOCK];"]
    src += ["  " + ln for ln in body]
    src.append("}")
    return "\n".join(src) + "\n", tuple((rv, rv in outs) for rv in self.params), kind


def _check_group(fu, g):
  for m in g.members + [n for n in fu.inline]:
    if m.prim in _NO_CUDA_RULE:
      raise Unsupported(f"no CUDA rule for {m.prim}")
    for v in list(m.ins) + list(m.outs):
      if np.dtype(v.dtype) not in _DTYPES:
        raise Unsupported(f"dtype {np.dtype(v.dtype).name} in {m.prim}")


class CudaProgram(NamedTuple):
  """A lowered program: the compiler's ``program`` (``ir.Program``), its fusion ``fu``
  and ``steps``: (group, CudaKernel or None) in execution order (None: a dot or host
  group, which the GPU backend runs with cuBLAS or CuPy, not an emitted kernel; view
  groups, reshapes sharing their operand's buffer, are no steps)."""
  program: object
  fu: object
  steps: tuple

  @property
  def kernels(self):
    return [k for _, k in self.steps if k is not None]


def lower(closed, name="jaxpr"):
  """The ``CudaProgram`` of ``closed`` (a ClosedJaxpr): one ``CudaKernel`` per loop group
  of the CPU pipeline's fusion.  Raises ``Unsupported`` for a loop group it cannot emit."""
  program, fu, _ = _driver.lower_parts(closed)
  steps = []
  n = 0
  for g in fu.groups:
    if g.kind == "view":   # a reshape sharing its operand's buffer: nothing to run
      continue
    if g.kind != "loop":
      steps.append((g, None))
      continue
    _check_group(fu, g)
    kname = f"pj_{name}_k{n}"
    n += 1
    kg = CudaKernelGen(fu, g, lambda v: plan.root(fu, v), kname)
    src, params, kind = kg.generate_cuda()
    steps.append((g, CudaKernel(kname, src, params, kind, kg.launch_work, kg.vec)))
  return CudaProgram(program, fu, tuple(steps))


def module_source(ks):
  """One CUDA translation unit: the prelude and the kernels ``ks`` (CudaKernels)."""
  return prelude() + "\n" + "".join(k.source for k in ks)


def launch_config(k, max_blocks=65535):
  """(blocks, threads per block) launching kernel ``k`` (a CudaKernel): enough blocks for
  one thread per work item (map/column kernels) or one block per row, at most
  ``max_blocks`` (the loops stride over the rest)."""
  if k.kind == "row":
    return max(1, min(k.work, max_blocks)), BLOCK
  return max(1, min(-(-k.work // BLOCK), max_blocks)), BLOCK
