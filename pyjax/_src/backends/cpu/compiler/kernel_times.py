"""``PYJAX_KERNEL_TIMES=1``: time every kernel of the native tier (a debugging aid).

When the variable is set while a program is lowered to C, each segment's run function
(``cmodule.segment_run_c``; also the segments inside native loop bodies) brackets every
group -- loop kernel, BLAS product, opaque kernel -- with ``clock_gettime`` and adds the
elapsed nanoseconds and a call count to a table of its own (atomically: an executable may
run on several threads at once).  The tables register themselves at load time in a list
private to the translation unit, which ``pyjax_kernel_report`` formats; the source differs
from the uninstrumented one, so the compiler's caches keep both builds apart.

``CpuExecutable.kernel_times()`` (``jit(f).lower(*a).compile().runtime_executable()``)
returns one dict per kernel; with the variable set, every instrumented program's table
is printed on stderr when the process exits, slowest kernels first.  The clock reads cost
~50 ns per kernel; the numbers are wall time of the calling thread's view of each kernel
(a kernel split over the thread pool counts once, for its whole duration).
"""
from __future__ import annotations

import atexit
import ctypes
import os
import sys
import threading

from pyjax._src.backends.cpu.compiler.ir import Value

# once per translation unit (guarded), ahead of the first instrumented run function
KT_HEAD = r"""
#ifndef PJ_KT_DEFINED
#define PJ_KT_DEFINED 1
#include <stdio.h>
#include <time.h>
typedef struct pj_kt { const char *fn; int n; const char *const *names; int64_t *ns;
                       int64_t *calls; struct pj_kt *next; } pj_kt;
static pj_kt *pj_kt_list;
static inline int64_t pj_kt_now(void) {
  struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}
/* one line per kernel: run function, index, calls, nanoseconds, description */
size_t pyjax_kernel_report(char *buf, size_t cap) {
  size_t len = 0;
  for (pj_kt *t = pj_kt_list; t; t = t->next)
    for (int i = 0; i < t->n; i++) {
      char line[512];
      int k = snprintf(line, sizeof line, "%s\t%d\t%lld\t%lld\t%s\n", t->fn, i,
                       (long long)__atomic_load_n(t->calls, __ATOMIC_RELAXED),
                       (long long)__atomic_load_n(&t->ns[i], __ATOMIC_RELAXED), t->names[i]);
      if (k > 0 && len + (size_t)k < cap) memcpy(buf + len, line, (size_t)k);
      len += k > 0 ? (size_t)k : 0;
    }
  if (cap) buf[len < cap ? len : cap - 1] = 0;
  return len;
}
#endif
"""


def enabled():
  """Whether ``PYJAX_KERNEL_TIMES`` asks for instrumented kernels (read at each lowering)."""
  v = os.environ.get("PYJAX_KERNEL_TIMES", "").strip().lower()
  return v not in ("", "0", "false", "no", "off")


def _shape(v):
  return f"{v.dtype.name}[{','.join(str(d) for d in v.shape)}]"


def describe(g):
  """A one-line description of group ``g`` (what the report names a kernel)."""
  if g.kind == "loop":
    prims = " ".join(m.prim for m in g.members)
    if len(prims) > 120:
      prims = prims[:117] + "..."
    form = g.form_kind
    shape = ",".join(str(d) for d in g.full_shape)
    where = " (timed in the product before it: its epilogue)" if (
        g.epilogue_of is not None and g.epilogue_mode) else ""
    return f"{form} [{shape}]: {prims}{where}"
  node = g.node
  ins = " ".join(_shape(v) for v in node.ins if type(v) is Value)
  outs = " ".join(_shape(v) for v in node.outs)
  return f"{node.prim} {ins} -> {outs}"


def _c_string(s):
  return '"' + s.replace("\\", "\\\\").replace('"', "'") + '"'


def instrument(fname, groups, bodies):
  """(C lines before the run function, the instrumented body lines) for run function
  ``fname`` whose groups ``groups`` run the statement lists ``bodies`` (one per group)."""
  n = len(groups)
  names = ", ".join(_c_string(describe(g)) for g in groups) or '""'
  pre = [KT_HEAD,
         f"static const char *const pj_ktn_{fname}[{max(n, 1)}] = {{{names}}};",
         f"static int64_t pj_ktns_{fname}[{max(n, 1)}], pj_ktc_{fname};",
         f"static pj_kt pj_kt_{fname} = {{\"{fname}\", {n}, pj_ktn_{fname}, pj_ktns_{fname}, "
         f"&pj_ktc_{fname}, 0}};",
         f"__attribute__((constructor)) static void pj_kt_reg_{fname}(void) {{",
         f"  pj_kt_{fname}.next = pj_kt_list; pj_kt_list = &pj_kt_{fname}; }}"]
  body = []
  for i, lines in enumerate(bodies):
    body.append("  { const int64_t pj_t0 = pj_kt_now();")
    body.extend(lines)
    body.append(f"  __atomic_fetch_add(&pj_ktns_{fname}[{i}], pj_kt_now() - pj_t0, "
                "__ATOMIC_RELAXED); }")
  body.append(f"  __atomic_fetch_add(&pj_ktc_{fname}, 1, __ATOMIC_RELAXED);")
  return pre, body


def read(lib):
  """The kernel table of the loaded library ``lib`` (a ctypes library): a list of dicts
  ``{"function", "index", "kernel", "calls", "total_s"}``, or [] when it was built
  without instrumentation."""
  try:
    fn = lib.pyjax_kernel_report
  except AttributeError:
    return []
  fn.restype = ctypes.c_size_t
  fn.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
  need = fn(None, 0) + 1
  buf = ctypes.create_string_buffer(need)
  fn(buf, need)
  rows = []
  for line in buf.value.decode("utf-8", "replace").splitlines():
    f, i, calls, ns, desc = line.split("\t", 4)
    rows.append({"function": f, "index": int(i), "kernel": desc, "calls": int(calls),
                 "total_s": int(ns) / 1e9})
  return rows


_programs = []          # (program name, NativeProgram): kept alive to report at exit
_lock = threading.Lock()
_registered = [False]


def track(name, program):
  """Report ``program`` (a built, instrumented NativeProgram) at exit."""
  with _lock:
    _programs.append((name, program))
    if not _registered[0]:
      _registered[0] = True
      atexit.register(_report_at_exit)


def format_table(name, rows):
  """The text table of one program's kernel times, slowest kernels first."""
  total = sum(r["total_s"] for r in rows) or 1e-30
  calls = max([r["calls"] for r in rows] + [0])
  out = [f"pyjax kernel times: {name} (up to {calls} call(s) per kernel)",
         "   total ms   per call us   share  kernel"]
  for r in sorted(rows, key=lambda r: -r["total_s"]):
    per = r["total_s"] / r["calls"] * 1e6 if r["calls"] else 0.0
    out.append(f"  {r['total_s'] * 1e3:9.3f}  {per:12.1f}  {r['total_s'] / total:6.1%}  "
               f"{r['function']}#{r['index']} {r['kernel']}")
  return "\n".join(out)


def _report_at_exit():
  for name, prog in _programs:
    rows = prog.kernel_times()
    if rows and any(r["calls"] for r in rows):
      print(format_table(name, rows), file=sys.stderr, flush=True)
