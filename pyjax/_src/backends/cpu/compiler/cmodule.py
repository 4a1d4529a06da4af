"""The translation unit of one executable: every kernel of every segment, and the entry
points.

The C ABI (``docs/compiler.md``):

- ``void pyjax_run_<s>(void **B, char *A)``: runs segment ``s``.  ``B`` holds the data
  pointers of the segment's inputs, then its (preallocated) outputs, then its constants,
  all C-contiguous; ``A`` is the segment's arena (``pyjax_arena_size_<s>`` bytes, 64-byte
  aligned).  This is the whole native interface; it needs nothing from Python.
- ``PyObject *pyjax_make(int s, PyObject *spec)``: a CPython callable for segment ``s``
  (a builtin function with ``METH_FASTCALL``): ``f(*arrays) -> list of arrays``.  It checks
  and unwraps NumPy arrays (non-contiguous or misaligned ones are copied first), allocates
  the outputs, keeps the arena between calls, releases the GIL around heavy work and calls
  ``pyjax_run_<s>``: one native call per segment, no per-argument ctypes marshalling.  It is
  written against CPython's stable C API and NumPy's (stable) array struct layout, declared
  here, so no Python or NumPy headers are needed to build it.
"""
from __future__ import annotations

import math

from pyjax._src.backends.cpu.compiler import codegen_c
from pyjax._src.backends.cpu.compiler import kernel_times
from pyjax._src.backends.cpu.compiler.kernels import dot as dot_mod
from pyjax._src.backends.cpu.compiler.kernels import elementwise as elementwise_c
from pyjax._src.backends.cpu.compiler import opaque
from pyjax._src.backends.cpu.compiler import plan as plan_mod
from pyjax._src.backends.cpu.compiler.ir import Value

GIL_RELEASE_WORK = 1 << 14

_PYABI = r"""
/* --- the part of CPython's stable C API and NumPy's array struct used here --- */
typedef ptrdiff_t Py_ssize_t;
typedef struct pj_pyobject { Py_ssize_t ob_refcnt; void *ob_type; } PyObject;
typedef PyObject *(*PyCFunction)(PyObject *, PyObject *);
typedef struct { const char *ml_name; PyCFunction ml_meth; int ml_flags; const char *ml_doc; } PyMethodDef;
#define PJ_METH_FASTCALL 0x0080
extern PyObject *PyCFunction_NewEx(PyMethodDef *, PyObject *, PyObject *);
extern void Py_IncRef(PyObject *);
extern void Py_DecRef(PyObject *);
extern PyObject *PyList_New(Py_ssize_t);
extern int PyList_SetItem(PyObject *, Py_ssize_t, PyObject *);
extern PyObject *PyTuple_GetItem(PyObject *, Py_ssize_t);
extern Py_ssize_t PyTuple_Size(PyObject *);
extern PyObject *PyObject_Call(PyObject *, PyObject *, PyObject *);
extern PyObject *PyObject_CallFunctionObjArgs(PyObject *, ...);
extern PyObject *PyLong_FromLong(long);
extern long PyLong_AsLong(PyObject *);
extern void *PyLong_AsVoidPtr(PyObject *);
extern void PyErr_SetString(PyObject *, const char *);
extern PyObject *PyErr_NoMemory(void);
extern PyObject *PyErr_Occurred(void);
extern PyObject *PyExc_TypeError;
extern PyObject *PyCapsule_New(void *, const char *, void (*)(PyObject *));
extern void *PyCapsule_GetPointer(PyObject *, const char *);
extern void *PyEval_SaveThread(void);
extern void PyEval_RestoreThread(void *);
typedef struct { PyObject ob_base; void *typeobj; char kind, type, byteorder, flags_;
                 int type_num; } pj_descr;
typedef struct { PyObject ob_base; char *data; int nd; Py_ssize_t *dimensions;
                 Py_ssize_t *strides; PyObject *base; pj_descr *descr; int flags; } pj_array;
#define PJ_C_CONTIGUOUS 0x0001
#define PJ_ALIGNED 0x0100

typedef struct {
  PyObject *empty, *normalize, *ndarray;
  PyObject **out_args, **consts, **index;
  int *in_typenum;
  void **const_ptr;
  char *arena;
  int arena_busy;
  int nin, nout, nconst;
  size_t arena_size;
} pj_inst;

typedef void (*pj_gemm_s)(char *, char *, int *, int *, int *, float *, float *, int *,
                          float *, int *, float *, float *, int *);
typedef void (*pj_gemm_d)(char *, char *, int *, int *, int *, double *, double *, int *,
                          double *, int *, double *, double *, int *);
static pj_gemm_s pj_sgemm;
typedef int (*pj_sgemm_rm_t)(int, int, int64_t, int64_t, int64_t, const float *, int64_t,
                             const float *, int64_t, float *, int64_t);
static pj_sgemm_rm_t pj_sgemm_rm;   /* kernels/sgemm.py: tried before pj_sgemm */
static pj_gemm_d pj_dgemm;
static void (*pj_blas_set_threads)(int);
static int (*pj_blas_get_threads)(void);

static void pj_inst_free(PyObject *cap) {
  pj_inst *I = (pj_inst *)PyCapsule_GetPointer(cap, "pyjax.segment");
  if (!I) return;
  Py_DecRef(I->empty); Py_DecRef(I->normalize); Py_DecRef(I->ndarray);
  for (int i = 0; i < I->nout; i++) Py_DecRef(I->out_args[i]);
  for (int i = 0; i < I->nconst; i++) Py_DecRef(I->consts[i]);
  for (int i = 0; i < I->nin; i++) Py_DecRef(I->index[i]);
  free(I->out_args); free(I->consts); free(I->index); free(I->in_typenum); free(I->const_ptr);
  free(I->arena); free(I);
}

static int pj_ok(pj_inst *I, PyObject *o, int i, int nd, const int64_t *dims) {
  if (o->ob_type != (void *)I->ndarray) return 0;
  pj_array *a = (pj_array *)o;
  if ((a->flags & (PJ_C_CONTIGUOUS | PJ_ALIGNED)) != (PJ_C_CONTIGUOUS | PJ_ALIGNED)) return 0;
  if (a->descr->type_num != I->in_typenum[i] || a->descr->byteorder == '>') return 0;
  if (a->nd != nd) return 0;
  for (int k = 0; k < nd; k++) if (a->dimensions[k] != dims[k]) return 0;
  return 1;
}
"""


def segment_run_c(fusion, seg, kernels, fname=None, static=False):
  """C of a segment's run function ``fname(void **B, char *A)`` (default
  ``pyjax_run_<s>``) and its arena-size constant (non-static functions only)."""
  s = seg.index
  fname = fname or f"pyjax_run_{s}"
  slots = seg.slots()
  root = lambda v: plan_mod.root(fusion, v)  # noqa: E731
  bodies = []   # the statements of each group
  for i, g in enumerate(seg.groups):
    if g.kind == "loop":
      kname, params = kernels[g]
      args = [f"(void *)({slots[rv]})" for rv in params]
      if _runs_as_epilogue(seg, i):
        bodies.append(["  /* runs as the epilogue of the product above */"])
        continue
      bodies.append([f"  {{ void *P[{max(len(args), 1)}] = {{{', '.join(args) or '0'}}}; {kname}(P); }}"])
    elif g in kernels:   # an opaque native kernel (opaque.py); literal operands: NULL
      kname, _ = kernels[g]
      args = ["(void *)0" if type(v) is not Value else f"(void *)({slots[root(v)]})"
              for v in list(g.node.ins) + list(g.node.outs)]
      bodies.append([f"  {{ void *P[{len(args)}] = {{{', '.join(args)}}}; {kname}(P); }}"])
    else:
      ep = None
      if i + 1 < len(seg.groups) and _runs_as_epilogue(seg, i + 1):
        e = seg.groups[i + 1]
        kname, params = kernels[e]
        ep = (kname, [f"(void *)({slots[rv]})" for rv in params], e.epilogue_mode)
      lines = dot_mod.emit_call(g.node, lambda v: slots[root(v)], elementwise_c.storage_type,
                                ep)
      bodies.append(["  " + ln for ln in lines])
  has_dot = any(g.kind == "dot" and g.node.prim == "dot_general" and g not in kernels
                for g in seg.groups)
  out = []
  if kernel_times.enabled():   # PYJAX_KERNEL_TIMES: every group timed
    pre, body = kernel_times.instrument(fname, seg.groups, bodies)
    out.extend(pre)
  else:
    body = [ln for lines in bodies for ln in lines]
  out.append(f"{'static ' if static else ''}void {fname}(void **B, char *A) {{")
  out.append("  (void)B; (void)A;")
  if has_dot:
    out.append("  int pj_blas_prev = pj_blas_get_threads ? pj_blas_get_threads() : 0;")
    out.append("  if (pj_blas_set_threads && pj_blas_prev != 1) pj_blas_set_threads(1);")
  out.extend(body)
  if has_dot:
    out.append("  if (pj_blas_set_threads && pj_blas_prev != 1) pj_blas_set_threads(pj_blas_prev);")
  out.append("}")
  if not static:
    out.append(f"const size_t pyjax_arena_size_{s} = {seg.arena_size};")
  return "\n".join(out) + "\n"


def _runs_as_epilogue(seg, i):
  """Whether loop group ``seg.groups[i]`` runs inside the BLAS product before it."""
  g = seg.groups[i]
  return (g.kind == "loop" and g.epilogue_mode != 0 and i > 0
          and g.epilogue_of is seg.groups[i - 1])


def _segment_work(seg):
  work = 0
  for g in seg.groups:
    if g.kind == "loop":
      work += math.prod(g.full_shape)
    elif g.node.prim != "dot_general" or opaque.lookup(g.node) is not None:
      work += opaque.lookup(g.node).work(g.node)
    else:
      node = g.node
      lc, rc, lb, rb, lf, rf = dot_mod._dims(node)
      work += node.outs[0].size * max(math.prod(node.ins[0].shape[i] for i in lc), 1)
  return work


def _segment_entry_c(seg):
  """C of one segment's Python entry (``entry_c``)."""
  specs = [(tuple(v.shape), v.dtype) for v in seg.inputs]
  return entry_c(seg.index, specs, len(seg.outputs), len(seg.consts), seg.arena_size,
                 _segment_work(seg) >= GIL_RELEASE_WORK, getattr(seg, "aliases", None))


ENTRY_MARK = "static const int pj_alias_"   # the first line of every entry_c


def entry_c(s, in_specs, nout, ncon, arena, heavy, aliases=None):
  """C of entry ``s``'s Python callable ``pj_call_<s>`` (it calls ``pyjax_run_<s>``):
  ``in_specs`` the inputs' (shape, dtype), ``nout`` outputs, ``ncon`` constants.
  ``aliases`` ({output j: input i}, donated buffers): the callable then also accepts
  ``f(*arrays, mask)``; output ``j`` with bit ``j`` of the int ``mask`` set is written into
  (and returned as) argument ``i`` itself, when that array was used in place (the caller
  guarantees that nothing else holds it)."""
  nin = len(in_specs)
  out = []
  al = [-1] * nout
  for j, i in (aliases or {}).items():
    if j < min(nout, 62):
      al[j] = i
  nal = 1 if any(i >= 0 for i in al) else 0
  out.append(f"static const int pj_alias_{s}[{max(nout, 1)}] = {{{', '.join(map(str, al)) or '0'}}};")
  nds = [len(sh) for sh, _ in in_specs]
  dims = []
  offs = []
  for sh, _ in in_specs:
    offs.append(len(dims))
    dims.extend(sh)
  out.append(f"static const int pj_nd_{s}[{max(nin, 1)}] = {{{', '.join(map(str, nds)) or '0'}}};")
  out.append(f"static const int64_t pj_dims_{s}[{max(len(dims), 1)}] = "
             f"{{{', '.join(map(str, dims)) or '0'}}};")
  out.append(f"static const int pj_doff_{s}[{max(nin, 1)}] = {{{', '.join(map(str, offs)) or '0'}}};")
  heavy = 1 if heavy else 0
  out.append(f"""static PyObject *pj_call_{s}(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {{
  pj_inst *I = (pj_inst *)PyCapsule_GetPointer(self, "pyjax.segment");
  if (!I) return NULL;
  long amask = 0;
  if ({nal} && nargs == {nin} + 1) {{
    amask = PyLong_AsLong(args[{nin}]);
    if (amask == -1 && PyErr_Occurred()) return NULL;
  }} else if (nargs != {nin}) {{
    PyErr_SetString(PyExc_TypeError, "pyjax native segment: expected {nin} arguments");
    return NULL;
  }}
  void *B[{max(nin + nout + ncon, 1)}];
  PyObject *tmp[{max(nin, 1)}];
  PyObject *outs[{max(nout, 1)}];
  unsigned char inplace[{max(nin, 1)}];
  int ntmp = 0, nouts = 0;
  for (int i = 0; i < {nin}; i++) {{
    PyObject *a = args[i];
    inplace[i] = 1;
    if (!pj_ok(I, a, i, pj_nd_{s}[i], pj_dims_{s} + pj_doff_{s}[i])) {{
      inplace[i] = 0;
      PyObject *c = PyObject_CallFunctionObjArgs(I->normalize, a, I->index[i], NULL);
      if (!c) goto fail;
      tmp[ntmp++] = c;
      if (!pj_ok(I, c, i, pj_nd_{s}[i], pj_dims_{s} + pj_doff_{s}[i])) {{
        PyErr_SetString(PyExc_TypeError, "pyjax native segment: argument of the wrong shape or dtype");
        goto fail;
      }}
      a = c;
    }}
    B[i] = ((pj_array *)a)->data;
  }}
  for (int j = 0; j < {nout}; j++) {{
    PyObject *o;
    const int d = pj_alias_{s}[j];
    if (d >= 0 && ((amask >> j) & 1) && inplace[d]) {{   /* a donated input's buffer */
      o = args[d];
      Py_IncRef(o);
    }} else {{
      o = PyObject_Call(I->empty, I->out_args[j], NULL);
      if (!o) goto fail;
    }}
    outs[nouts++] = o;
    B[{nin} + j] = ((pj_array *)o)->data;
  }}
  for (int k = 0; k < {ncon}; k++) B[{nin + nout} + k] = I->const_ptr[k];
  {{
    char *A = NULL;
    int own = 0;
    if ({arena}) {{
      if (__atomic_exchange_n(&I->arena_busy, 1, __ATOMIC_ACQUIRE) == 0) A = I->arena;
      else {{ A = (char *)aligned_alloc(64, {(arena + 63) // 64 * 64}); own = 1;
             if (!A) {{ PyErr_NoMemory(); goto fail; }} }}
    }}
    if ({heavy}) {{
      void *ts = PyEval_SaveThread();
      pyjax_run_{s}(B, A);
      PyEval_RestoreThread(ts);
    }} else {{
      pyjax_run_{s}(B, A);
    }}
    if ({arena}) {{
      if (own) free(A); else __atomic_store_n(&I->arena_busy, 0, __ATOMIC_RELEASE);
    }}
  }}
  for (int i = 0; i < ntmp; i++) Py_DecRef(tmp[i]);
  {{
    PyObject *res = PyList_New({nout});
    if (!res) {{ ntmp = 0; goto fail; }}
    for (int j = 0; j < {nout}; j++) PyList_SetItem(res, j, outs[j]);
    return res;
  }}
fail:
  for (int i = 0; i < ntmp; i++) Py_DecRef(tmp[i]);
  for (int j = 0; j < nouts; j++) Py_DecRef(outs[j]);
  return NULL;
}}""")
  return "\n".join(out) + "\n"


_MAKE = r"""
PyObject *pyjax_make(int seg, PyObject *spec) {
  if (seg < 0 || seg >= PJ_NSEG) { PyErr_SetString(PyExc_TypeError, "bad segment"); return NULL; }
  pj_inst *I = (pj_inst *)calloc(1, sizeof(pj_inst));
  if (!I) return PyErr_NoMemory();
  I->empty = PyTuple_GetItem(spec, 0); Py_IncRef(I->empty);
  I->normalize = PyTuple_GetItem(spec, 1); Py_IncRef(I->normalize);
  I->ndarray = PyTuple_GetItem(spec, 2); Py_IncRef(I->ndarray);
  PyObject *typenums = PyTuple_GetItem(spec, 3), *out_args = PyTuple_GetItem(spec, 4);
  PyObject *consts = PyTuple_GetItem(spec, 5), *blas = PyTuple_GetItem(spec, 6);
  I->nin = (int)PyTuple_Size(typenums);
  I->nout = (int)PyTuple_Size(out_args);
  I->nconst = (int)PyTuple_Size(consts);
  I->in_typenum = (int *)calloc(I->nin + 1, sizeof(int));
  I->index = (PyObject **)calloc(I->nin + 1, sizeof(PyObject *));
  I->out_args = (PyObject **)calloc(I->nout + 1, sizeof(PyObject *));
  I->consts = (PyObject **)calloc(I->nconst + 1, sizeof(PyObject *));
  I->const_ptr = (void **)calloc(I->nconst + 1, sizeof(void *));
  for (int i = 0; i < I->nin; i++) {
    I->in_typenum[i] = (int)PyLong_AsLong(PyTuple_GetItem(typenums, i));
    I->index[i] = PyLong_FromLong(i);
  }
  for (int i = 0; i < I->nout; i++) { I->out_args[i] = PyTuple_GetItem(out_args, i); Py_IncRef(I->out_args[i]); }
  for (int i = 0; i < I->nconst; i++) {
    I->consts[i] = PyTuple_GetItem(consts, i); Py_IncRef(I->consts[i]);
    I->const_ptr[i] = ((pj_array *)I->consts[i])->data;
  }
  if (PyTuple_Size(spec) > 9)
    pyjax_set_runtime(PyLong_AsVoidPtr(PyTuple_GetItem(spec, 7)),
                      PyLong_AsVoidPtr(PyTuple_GetItem(spec, 8)),
                      PyLong_AsVoidPtr(PyTuple_GetItem(spec, 9)));
  if (PyTuple_Size(blas) >= 2) {
    void *s = PyLong_AsVoidPtr(PyTuple_GetItem(blas, 0));
    void *d = PyLong_AsVoidPtr(PyTuple_GetItem(blas, 1));
    if (s) pj_sgemm = (pj_gemm_s)s;
    if (d) pj_dgemm = (pj_gemm_d)d;
  }
  if (PyTuple_Size(blas) >= 4) {
    void *st = PyLong_AsVoidPtr(PyTuple_GetItem(blas, 2));
    void *gt = PyLong_AsVoidPtr(PyTuple_GetItem(blas, 3));
    if (st && gt) { pj_blas_set_threads = (void (*)(int))st; pj_blas_get_threads = (int (*)(void))gt; }
  }
  if (PyTuple_Size(blas) >= 5) {   /* the runtime's float32 GEMM (kernels/sgemm.py) */
    void *og = PyLong_AsVoidPtr(PyTuple_GetItem(blas, 4));
    if (og) pj_sgemm_rm = (pj_sgemm_rm_t)og;
  }
  I->arena_size = pj_arena_sizes[seg];
  if (I->arena_size) {
    I->arena = (char *)aligned_alloc(64, (I->arena_size + 63) / 64 * 64);
    if (!I->arena) { free(I); return PyErr_NoMemory(); }
  }
  if (PyErr_Occurred()) { return NULL; }
  PyObject *cap = PyCapsule_New(I, "pyjax.segment", pj_inst_free);
  if (!cap) return NULL;
  /* spec[10]: the library's owner, kept as the function's m_module: CPython releases it
     after m_self (the capsule, whose destructor is in this library), so the library is
     unloaded only once nothing from it remains */
  PyObject *owner = PyTuple_Size(spec) > 10 ? PyTuple_GetItem(spec, 10) : NULL;
  PyObject *fn = PyCFunction_NewEx(&pj_defs[seg], cap, owner);
  Py_DecRef(cap);
  return fn;
}

void pyjax_set_blas(void *s, void *d) { pj_sgemm = (pj_gemm_s)s; pj_dgemm = (pj_gemm_d)d; }
"""


def group_kernels(fusion, seg, prefix):
  """(C sources, {group: (kernel name, params)}) of a segment's loop kernels and opaque
  native kernels (``opaque.py``), named ``<prefix><group id>``."""
  root = lambda v: plan_mod.root(fusion, v)  # noqa: E731
  srcs, kernels = [], {}
  for g in seg.groups:
    name = f"{prefix}{g.id}"
    if g.kind == "loop":
      src, params = codegen_c.kernel_source(fusion, g, root, name)
    elif g.node.prim != "dot_general" or opaque.lookup(g.node) is not None:
      src, params = opaque.lookup(g.node).kernel_source(g.node, name), None
    else:
      continue
    srcs.append(src)
    kernels[g] = (name, params)
  return srcs, kernels


def unit_head(have_float16, mvec, python_abi=True):
  """The C every translation unit starts with: prelude, runtime, Python ABI, GEMM."""
  return "\n".join([elementwise_c.prelude(have_float16, mvec), _RUNTIME_DECL,
                    _PYABI if python_abi else _BLAS_ONLY, dot_mod.GEMM_HELPERS])


def unit_tail(arena_sizes):
  """The C every translation unit with Python entries ends with: the entry table
  (entry ``s`` is ``pj_call_<s>``) and ``pyjax_make``."""
  n = len(arena_sizes)
  parts = [f"#define PJ_NSEG {n}",
           f"static const size_t pj_arena_sizes[{max(n, 1)}] = "
           f"{{{', '.join(str(a) for a in arena_sizes) or '0'}}};"]
  defs = ", ".join(f'{{"pyjax_segment_{s}", (PyCFunction)(void (*)(void))pj_call_{s}, '
                   f'PJ_METH_FASTCALL, NULL}}' for s in range(n))
  parts.append(f"static PyMethodDef pj_defs[{max(n, 1)}] = {{{defs or '{0}'}}};")
  parts.append(_MAKE)
  return "\n".join(parts)


def module_source(fusion, steps, have_float16, mvec, python_abi=True):
  """(C source, kernel count) of the executable's translation unit: the prelude, the
  kernels, the segments' run functions, then (``python_abi``) their Python entries."""
  segs = [s for s in steps if isinstance(s, plan_mod.Segment)]
  parts = [unit_head(have_float16, mvec, python_abi)]
  kernels = {}
  nk = 0
  for seg in segs:
    srcs, ks = group_kernels(fusion, seg, "pj_k")
    parts.extend(srcs)
    kernels.update(ks)
    nk += len(seg.groups)
  for seg in segs:
    parts.append(segment_run_c(fusion, seg, kernels))
  if python_abi:
    parts.extend(_segment_entry_c(seg) for seg in segs)
    parts.append(unit_tail([s.arena_size for s in segs]))
  return "\n".join(parts), nk


_RUNTIME_DECL = r"""
typedef void (*pj_task_t)(void *, int64_t, int64_t);
typedef void (*pj_parallel_for_t)(pj_task_t, void *, int64_t, int64_t);
static pj_parallel_for_t pj_parallel_for;
/* the runtime's pj_parallel_for, pj_scratch_alloc and pj_scratch_free (null: none) */
void pyjax_set_runtime(void *p, void *sa, void *sf) {
  if (p) pj_parallel_for = (pj_parallel_for_t)p;
  if (sa && sf) { pj_scratch_alloc = (pj_scratch_alloc_t)sa; pj_scratch_free = (pj_scratch_free_t)sf; }
}
"""

_BLAS_ONLY = r"""
typedef void (*pj_gemm_s)(char *, char *, int *, int *, int *, float *, float *, int *,
                          float *, int *, float *, float *, int *);
typedef void (*pj_gemm_d)(char *, char *, int *, int *, int *, double *, double *, int *,
                          double *, int *, double *, double *, int *);
static pj_gemm_s pj_sgemm;
typedef int (*pj_sgemm_rm_t)(int, int, int64_t, int64_t, int64_t, const float *, int64_t,
                             const float *, int64_t, float *, int64_t);
static pj_sgemm_rm_t pj_sgemm_rm;   /* kernels/sgemm.py: tried before pj_sgemm */
static pj_gemm_d pj_dgemm;
static void (*pj_blas_set_threads)(int);
static int (*pj_blas_get_threads)(void);
void pyjax_set_blas(void *s, void *d) { pj_sgemm = (pj_gemm_s)s; pj_dgemm = (pj_gemm_d)d; }
"""
