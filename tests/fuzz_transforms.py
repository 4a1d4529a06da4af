"""The differential fuzzer's transformation tiers (``tests/fuzz_vs_jax.py --tiers ...``).

``grad:numpy`` / ``grad:native`` (``grad`` for both): the program's reverse-mode derivative.
Its inexact (float and complex) inputs are the primals, its inexact results the outputs;
each output gets a fixed random cotangent (drawn from the program's seed), and ``vjp`` of
the program, jitted, runs on JAX and on the pyjax tier.  Integer and bool values take no
part, as JAX's own rules see them: an op with an integer result (argmax, comparisons, casts
to int) passes no cotangent back, so only zero cotangents are compared.  The cotangents
(one per differentiated input) are compared like forward values, except that the sign of a
zero is not: a zero cotangent's sign depends on how a rule is written (``-ct * 0``).

A cotangent that differs is checked *locally*, op by op: pyjax runs the program as a
reverse sweep of per-op ``vjp``s (its forward values, the cotangent reaching each op, what
each op passes back), and JAX runs each op's ``vjp`` on pyjax's own inputs and incoming
cotangent.  An op whose cotangents differ there is a mismatch of that op; if none does,
and pyjax's whole-program ``vjp`` agrees with its own sweep, the difference grew from
tolerated upstream rounding ("amplified").  If the sweep disagrees with the whole-program
``vjp``, pyjax's composition of rules (linearize, partial evaluation, transposition) is at
fault: a mismatch of kind "composition".

``vmap:numpy`` / ``vmap:native`` (``vmap`` for both): the program vmapped over a new leading
axis of size 3 of every input (the input, then two random inputs of its dtype and shape),
jitted, against JAX's ``jit(vmap(...))``; a differing value is checked locally with JAX's
vmap of its op on pyjax's batched inputs.  Each vmapped result is also compared with pyjax
running the three programs one by one (jitted on the same tier): a difference there that
JAX's own vmap and loop do not show is a mismatch of kind "vmap-vs-loop".

The grad tier draws its own inputs (the program's dtypes and shapes, 5% special values,
from the seed): a program's printed inputs are not the ones its derivative ran on; the op
inputs in a mismatch's detail are.  Cost on one core, per program: about 1.3 s for each
grad tier and 1.5 s (NumPy tier) to 2.5 s (native) for each vmap tier, batches of 20.
"""
from __future__ import annotations

import random

import numpy as np

import fuzz_vs_jax as F

def expand_tiers(tiers):
  """``grad`` and ``vmap`` mean both jit tiers."""
  out = []
  for t in tiers:
    out += [f"{t}:numpy", f"{t}:native"] if t in ("grad", "vmap") else [t]
  return tuple(out)


def _inexact(dt):
  return F._kind(dt) in "fc"


def _mode(tier):
  return {"numpy": "off", "native": "sync"}[tier.split(":")[1]]


def _dtypes(prog, jax_mod):
  """The dtypes of the program's results (JAX's, abstractly)."""
  if getattr(prog, "_out_dtypes", None) is None:
    avals = [jax_mod.ShapeDtypeStruct(a.shape, a.dtype) for a in prog.inputs]
    with F._quiet():
      outs = jax_mod.eval_shape(prog.fn(jax_mod.numpy, jax_mod.lax), *avals)
    prog._out_dtypes = [(np.dtype(o.dtype), tuple(o.shape)) for o in outs]
  return prog._out_dtypes


def _rand(rng, dt, shape):
  dt = np.dtype(dt)
  n = int(np.prod(shape, dtype=np.int64))
  v = np.array([rng.gauss(0, 1) for _ in range(n)])
  if F._kind(dt) == "c":
    v = v + 1j * np.array([rng.gauss(0, 1) for _ in range(n)])
  return v.astype(dt).reshape(shape)


# --- grad ----------------------------------------------------------------------------------

class _GradSpec:
  """Which inputs are differentiated, which results get cotangents, and the cotangents."""

  def __init__(self, prog, jax_mod):
    outs = _dtypes(prog, jax_mod)
    self.diff = [i for i, a in enumerate(prog.inputs) if _inexact(a.dtype)]
    self.outs = [k for k, (dt, _) in enumerate(outs) if _inexact(dt)]
    rng = random.Random(prog.seed * 7919 + 17)
    self.cts = tuple(_rand(rng, *outs[k]) for k in self.outs)
    # inputs of the program's dtypes and shapes with few special values: a NaN or an
    # infinity reaching the cotangents makes most of them NaN, which compares nothing
    self.inputs = tuple(F.random_input(rng, [str(a.dtype)], a.shape, special=0.05)
                        for a in prog.inputs)

  @property
  def empty(self):
    return not self.diff or not self.outs


def _whole_vjp(prog, spec, lib):
  """A function of (inputs, cotangents): the vjp of the program w.r.t. its inexact
  inputs, on library ``lib`` (jax or pyjax)."""
  f = prog.fn(lib.numpy, lib.lax)

  def run(ins, cts):
    def h(*dx):
      full = list(ins)
      for i, v in zip(spec.diff, dx):
        full[i] = v
      outs = f(*full)
      return tuple(outs[k] for k in spec.outs)
    _, pull = lib.vjp(h, *[ins[i] for i in spec.diff])
    return tuple(pull(tuple(cts)))
  return run


def _sweep(prog, spec, lib, raised):
  """A function of (inputs, cotangents): the reverse sweep of per-op vjps on ``lib``:
  (forward values, the cotangent reaching each op's result or None, each op's cotangents
  passed back (a tuple, or None), the inputs' accumulated cotangents).  An op whose vjp
  raises (no derivative: nextafter, a while_loop) passes nothing back; its exception goes
  into ``raised`` (op index -> exception) as the function is traced."""
  m, lax = lib.numpy, lib.lax

  def run(ins, cts):
    n_in = len(ins)
    vals = list(ins)
    for name, args, p in prog.ops:
      vals.append(F.OPS[name][2](m, lax, p, *[vals[i] for i in args]))
    ct = [None] * len(vals)
    for k, c in zip(spec.outs, cts):
      ct[n_in + k] = c
    back = [None] * len(prog.ops)
    reach = list(ct[n_in:])
    for k in reversed(range(len(prog.ops))):
      name, args, p = prog.ops[k]
      c_out = ct[n_in + k]
      reach[k] = c_out
      d = [j for j, a in enumerate(args) if _inexact(vals[a].dtype)]
      if c_out is None or not d:
        continue

      def opf(*dx, name=name, args=args, p=p, d=d):
        xs = [vals[a] for a in args]
        for j, v in zip(d, dx):
          xs[j] = v
        return F.OPS[name][2](m, lax, p, *xs)
      try:
        _, pull = lib.vjp(opf, *[vals[args[j]] for j in d])
        cin = tuple(pull(c_out))
      except Exception as e:   # noqa: BLE001 -- compared with JAX's exception
        raised[k] = e
        continue
      back[k] = cin
      for j, c in zip(d, cin):
        a = args[j]
        ct[a] = c if ct[a] is None else ct[a] + c
    grads = tuple(ct[i] for i in spec.diff)
    return tuple(vals[n_in:]), tuple(reach), tuple(back), grads
  return run


def _tree_np(x):
  if x is None:
    return None
  if isinstance(x, (tuple, list)):
    return tuple(_tree_np(v) for v in x)
  return (np.asarray(x), np.dtype(x.dtype), bool(getattr(x, "weak_type", False)))


def _run_grad(progs, specs, lib, mode=None, sweep=False):
  """Each program's whole-program vjp (or sweep) on ``lib``, as one jitted function; one
  result (or exception) per program, a batch that raises rerun program by program."""
  args = [(s.inputs, s.cts) for s in specs]
  if not sweep:
    return _run_jitted([_whole_vjp(p, s, lib) for p, s in zip(progs, specs)], args, lib,
                       mode, _tree_np)
  raised = [{} for _ in progs]
  res = _run_jitted([_sweep(p, s, lib, r) for p, s, r in zip(progs, specs, raised)], args,
                    lib, mode, _tree_np)
  return [(x, r) for x, r in zip(res, raised)]


def _run_jitted(fns, args, lib, mode, convert):
  """``fns[i](*args[i])`` for each i, as one jitted function on ``lib`` (``mode``: pyjax's
  tier).  Each function is first traced alone (``eval_shape``: no compile), so one that
  raises (JAX has no derivative of nextafter, ...) is its own exception, the others still
  compiled together; a batch that raises when run is rerun function by function."""
  res = [None] * len(fns)
  for i, (fn, a) in enumerate(zip(fns, args)):
    try:
      with F._quiet():
        lib.eval_shape(fn, *a)
    except Exception as e:   # noqa: BLE001
      res[i] = e
  live = [i for i, r in enumerate(res) if r is None]

  def batch(*groups):
    return tuple(fns[i](*a) for i, a in zip(live, groups))
  try:
    with F._quiet():
      if mode is None:
        out = lib.jit(batch)(*[args[i] for i in live])
      else:
        from pyjax._src.backends.cpu import executable
        with executable.compile_mode_override(mode):
          out = lib.jit(batch)(*[args[i] for i in live])
    for i, r in zip(live, out):
      res[i] = convert(r)
  except Exception as e:   # noqa: BLE001
    if len(live) == 1:
      res[live[0]] = e
    else:
      for i in live:
        res[i] = _run_jitted([fns[i]], [args[i]], lib, mode, convert)[0]
  return res


def _same_ct(a, b):
  """``_same`` for cotangents: the sign of a zero is not compared."""
  if F._kind(b.dtype) in "fc" and a.shape == b.shape:
    a = np.where(a == 0, np.zeros_like(a), a)
    b = np.where(b == 0, np.zeros_like(b), b)
  return F._same(a, b)


def _op_vjp_refs(items, jax_mod):
  """The local check: for each (prog, k, vals, weak, c_out), JAX's vjp of op k on pyjax's
  forward inputs and incoming cotangent, in one jitted function; the exception where JAX
  raises."""
  if not items:
    return []
  from jax._src.lax.lax import _convert_element_type as _cvt
  m, lax = jax_mod.numpy, jax_mod.lax

  def one(prog, k, xs, weak, c_out):
    name, args, p = prog.ops[k]
    xs = [_cvt(x, weak_type=True) if w else x for x, w in zip(xs, weak)]
    d = [j for j, x in enumerate(xs) if _inexact(x.dtype)]

    def opf(*dx):
      ys = list(xs)
      for j, v in zip(d, dx):
        ys[j] = v
      return F.OPS[name][2](m, lax, p, *ys)
    y, pull = jax_mod.vjp(opf, *[xs[j] for j in d])
    if c_out.dtype != y.dtype:   # the widened check (_precise_refs)
      c_out = c_out.astype(y.dtype)
    return tuple(pull(c_out))

  fns = [lambda xs, c, it=it: one(it[0], it[1], xs, it[3], c) for it in items]
  return _run_jitted(fns, [(tuple(it[2]), it[4]) for it in items], jax_mod, None,
                     lambda r: tuple(np.asarray(v) for v in r))


_WIDE = {"f": np.float64, "c": np.complex128}


def _precise_refs(differing, jax_mod):
  """JAX's vjp of each differing op with its inexact inputs and cotangent widened to 64
  bits (x64 on for the call): the derivative to compare both libraries' roundings with."""
  items = []
  for _, (p, k, ins, weak, c_out), *_ in differing:
    wide = [a.astype(_WIDE[F._kind(a.dtype)]) if _inexact(a.dtype) else a for a in ins]
    items.append((p, k, wide, weak, c_out.astype(_WIDE[F._kind(c_out.dtype)])))
  if not items:
    return []
  with jax_mod.enable_x64(True):
    res = _op_vjp_refs(items, jax_mod)
  return [None if isinstance(r, Exception) else r for r in res]


def _as_accurate(g, r, exact):
  """Whether pyjax's cotangent ``g`` is, wherever it differs from JAX's ``r``, as close to
  the 64-bit ``exact`` as JAX's is (within the dtype's tolerance of it)."""
  if exact.shape != g.shape:
    return False
  k = F._kind(g.dtype)
  rtol = F._RTOL[str(np.finfo(g.dtype).dtype if k == "c" else g.dtype)]
  parts = [(g.real, r.real, exact.real), (g.imag, r.imag, exact.imag)] if k == "c" else [
      (g, r, exact)]
  with np.errstate(all="ignore"):
    for x, y, e in parts:
      x, y, e = (v.astype(np.float64) for v in (x, y, e))
      differs = ~(np.isclose(x, y, rtol=rtol, atol=rtol, equal_nan=True))
      if not differs.any():
        continue
      x, y, e = x[differs], y[differs], e[differs]
      if not (np.isfinite(x) & np.isfinite(e)).all():
        return False
      err_y = np.where(np.isfinite(y), np.abs(y - e), np.inf)
      if not (np.abs(x - e) <= err_y + rtol * np.maximum(np.abs(e), 1.0)).all():
        return False
  return True


def _describe_ct(g, r, idx, ins):
  s = (f"at {idx}: pyjax {g[idx] if idx is not None else g!r} vs JAX "
       f"{r[idx] if idx is not None else r!r}; inputs "
       + ", ".join(f"{a.dtype}{list(a.shape)}" for a in ins))
  if sum(a.size for a in ins) <= 64:
    s += "\n    op inputs: " + "; ".join(repr(a.tolist()) for a in ins)
  return s


def check_grad(progs, jax_mod, pyjax_mod, tier, tally):
  """The grad tier ``tier`` ("grad:numpy" or "grad:native") on ``progs``: one list of
  Mismatch per program (None where JAX failed).  Every op of every program is checked
  locally (pyjax's sweep, JAX's vjp of the op on pyjax's values), whether or not the
  whole-program cotangents differ: an op whose cotangent is lost to a NaN downstream, or
  that only integer inputs feed, is still exercised."""
  specs = [_GradSpec(p, jax_mod) for p in progs]
  live = [i for i, s in enumerate(specs) if s.outs]
  out = [[] for _ in progs]
  if tally is not None:
    tally[f"skipped [{tier}]"] += len(progs) - len(live)
  if not live:
    return out
  ps, ss = [progs[i] for i in live], [specs[i] for i in live]
  whole = [i for i in live if specs[i].diff]   # the whole-program vjp: inexact inputs
  refs = dict(zip(whole, _run_grad([progs[i] for i in whole], [specs[i] for i in whole],
                                   jax_mod)))
  gots = dict(zip(whole, _run_grad([progs[i] for i in whole], [specs[i] for i in whole],
                                   pyjax_mod, _mode(tier))))
  sweeps = _run_grad(ps, ss, pyjax_mod, _mode(tier), sweep=True)
  items, owners = [], []
  for i, p, s, (sw, raised) in zip(live, ps, ss, sweeps):
    if isinstance(sw, Exception):
      out[i].append(F.Mismatch(p, tier, None, None, "exception",
                               f"sweep: {type(sw).__name__}: {sw}"[:300], None))
      continue
    fwd, reach, back, _ = sw
    n_in = len(p.inputs)
    vals = [np.asarray(a) for a in s.inputs] + [v[0] for v in fwd]
    weak = [False] * n_in + [v[2] for v in fwd]
    for k, (_, args, _) in enumerate(p.ops):
      if k in raised:
        back = back[:k] + (raised[k],) + back[k + 1:]
      if back[k] is not None:
        items.append((p, k, [vals[a] for a in args], [weak[a] for a in args], reach[k][0]))
        owners.append((i, back[k]))
  bad_progs = set()
  n_ok = 0
  differing = []
  for (i, back), it, local in zip(owners, items, _op_vjp_refs(items, jax_mod)):
    p, k, ins, _, c_out = it
    name, _, prm = p.ops[k]
    if isinstance(local, Exception) or isinstance(back, Exception):
      if type(local) is not type(back):   # no derivative: raised alike, else a mismatch
        what = lambda e: (f"raises {type(e).__name__}: {e}" if isinstance(e, Exception)
                          else "does not raise")
        out[i].append(F.Mismatch(p, tier, len(p.inputs) + k, name, "exception",
                                 f"vjp of the op: JAX {what(local)}; pyjax {what(back)}"[:400],
                                 None))
        bad_progs.add(i)
      continue
    for j, ((g, gdt, _), r) in enumerate(zip(back, local)):
      ok, idx = _same_ct(g, r) if gdt == r.dtype else (False, None)
      if not ok:
        differing.append((i, it, j, g, r, idx))
        break
    else:
      n_ok += 1
  # a differing cotangent as close to the float64 derivative as JAX's is rounding: the
  # op's own forward value, rounded differently within tolerance, amplified by its rule
  for (i, it, j, g, r, idx), exact in zip(differing, _precise_refs(differing, jax_mod)):
    p, k, ins, _, c_out = it
    name, _, prm = p.ops[k]
    if exact is not None and _as_accurate(g, r, exact[j]):
      n_ok += 1
      if tally is not None:
        tally[f"as accurate as JAX [{tier}]"] += 1
      continue
    reason = F.explain(name, ins, g, prm) or explain_grad(name, ins, g, prm, c_out)
    if i not in bad_progs or reason is None:
      out[i].append(F.Mismatch(p, tier, len(p.inputs) + k, name, "value",
                               f"cotangent of operand {j}: "
                               + _describe_ct(g, r, idx, ins), reason))
    bad_progs.add(i)
  if tally is not None:
    tally[f"ops checked [{tier}]"] += n_ok
  for i, (sw, _) in zip(live, sweeps):
    if i not in refs or isinstance(sw, Exception) or i in bad_progs:
      continue   # (a program whose op is at fault is reported at that op)
    p, s, ref, got = progs[i], specs[i], refs[i], gots[i]
    if isinstance(ref, Exception):   # JAX has no derivative here: pyjax raises alike
      if type(got) is not type(ref):
        what = (f"{type(got).__name__}: {got}" if isinstance(got, Exception)
                else "no exception")
        out[i].append(F.Mismatch(p, tier, None, None, "exception",
                                 f"JAX raises {type(ref).__name__}: {ref}; pyjax {what}"[:400],
                                 None))
      elif tally is not None:
        tally[f"raised as JAX [{tier}]"] += 1
      continue
    if isinstance(got, Exception):
      out[i].append(F.Mismatch(p, tier, None, None, "exception",
                               f"{type(got).__name__}: {got}"[:300],
                               _explain_raise(p, s, got)))
      continue
    for j, ((g, gdt, _), (r, rdt, _), w) in enumerate(zip(got, ref, sw[3])):
      if gdt != rdt or g.shape != r.shape:
        out[i].append(F.Mismatch(p, tier, s.diff[j], "vjp", "type",
                                 f"cotangent of v{s.diff[j]}: pyjax {gdt}{list(g.shape)} vs "
                                 f"JAX {rdt}{list(r.shape)}", None))
        break
      if _same_ct(g, r)[0]:
        continue
      # pyjax's whole-program vjp against its own sweep of per-op vjps (each checked)
      w = np.zeros_like(g) if w is None else w[0]   # an input no inexact op reads
      ok, idx = _same_ct(g, w)
      if not ok:
        out[i].append(F.Mismatch(p, tier, s.diff[j], "vjp", "composition",
                                 f"cotangent of v{s.diff[j]} at {idx}: whole-program vjp "
                                 f"{g[idx] if idx is not None else g} vs pyjax's per-op sweep "
                                 f"{w[idx] if idx is not None else w}", None))
        break
      if tally is not None:
        tally[f"amplified [{tier}]"] += 1
      break
  return out


# Derivative differences whose cause is understood (predicate(op, inputs, pyjax's
# cotangent, params, incoming cotangent), reason), as fuzz_vs_jax.EXPLAINED.
EXPLAINED_GRAD = []


def _explain_raise(prog, spec, exc):
  """The reason pyjax's whole-program vjp may raise where JAX's does not, or None."""
  if (isinstance(exc, NotImplementedError) and "Differentiation rule" in str(exc)
      and any(prog.inputs[i].size == 0 for i in spec.diff)
      and any(name == "hypot" for name, _, _ in prog.ops)):
    return ("zero-size hypot: JAX's jnp.hypot (an inlined jit) gives a symbolic zero "
            "tangent for size-0 operands, so an op after it without a derivative rule "
            "(nextafter) is never differentiated there; pyjax differentiates it and raises")
  return None


def explain_grad(name, ins, g, params, c_out):
  for pred, reason in EXPLAINED_GRAD:
    if pred(name, ins, g, params, c_out):
      return reason
  return None


# --- vmap ----------------------------------------------------------------------------------

def batched_inputs(prog):
  """Each input stacked with two random inputs of its dtype and shape (a new axis 0)."""
  if getattr(prog, "_vmap_inputs", None) is None:
    rng = random.Random(prog.seed * 104729 + 3)
    ins = []
    for a in prog.inputs:
      name = str(a.dtype)
      ins.append(np.stack([a] + [F.random_input(rng, [name], a.shape) for _ in range(2)]))
    prog._vmap_inputs = ins
  return prog._vmap_inputs


def _run_vmap(progs, lib, mode=None, loop=False):
  """The programs vmapped (or, ``loop``, each of the 3 copies run alone, stacked), jitted
  as one function on ``lib``: one list of (value, dtype, weak) per program."""
  def one(f):
    if not loop:
      return lib.vmap(f)

    def rows(*ins):
      rs = [f(*[x[b] for x in ins]) for b in range(3)]
      return tuple(lib.numpy.stack([r[k] for r in rs]) for k in range(len(rs[0])))
    return rows
  fns = [one(p.fn(lib.numpy, lib.lax)) for p in progs]
  args = [tuple(batched_inputs(p)) for p in progs]
  return _run_jitted(fns, args, lib, mode, F._values)


def check_vmap(progs, jax_mod, pyjax_mod, tier, tally):
  """The vmap tier ``tier`` on ``progs``: one list of Mismatch per program (None where JAX
  failed)."""
  refs = _run_vmap(progs, jax_mod)
  gots = _run_vmap(progs, pyjax_mod, _mode(tier))
  out, cands = [], []
  for p, got, ref in zip(progs, gots, refs):
    if isinstance(ref, Exception):
      out.append(None)
      continue
    ms, cs = F._differences(p, tier, got, ref, inputs=batched_inputs(p))
    out.append(ms)
    cands += cs
  where = {id(p): i for i, p in enumerate(progs)}
  for c, local in zip(cands, F._local_refs(cands, jax_mod, vmapped=True)):
    m = F._judge(c, local)
    if m is not None and m.reason is None and c.idx:   # the EXPLAINED rules see one copy
      b = c.idx[0]
      m = m._replace(reason=F.explain(c.op, [a[b] for a in c.ins], c.got[b], c.params))
    if m is not None:
      out[where[id(c.prog)]].append(m)
    elif tally is not None:
      tally[f"amplified [{tier}]"] += 1
  # vmap against the loop of the three programs, on pyjax and (where pyjax's differ) on JAX
  loops = _run_vmap(progs, pyjax_mod, _mode(tier), loop=True)
  suspects = []
  for i, (p, got, lp) in enumerate(zip(progs, gots, loops)):
    if out[i] is None or isinstance(got, Exception) or isinstance(lp, Exception):
      continue
    for k, ((g, gdt, _), (r, rdt, _)) in enumerate(zip(got, lp)):
      if gdt == rdt and g.shape == r.shape and not F._same(g, r)[0]:
        suspects.append(i)
        break
  if suspects:
    sp = [progs[i] for i in suspects]
    jv = [refs[i] for i in suspects]
    jl = _run_vmap(sp, jax_mod, loop=True)
    for i, p, v, l in zip(suspects, sp, jv, jl):
      if isinstance(l, Exception):
        continue
      for k, ((g, gdt, _), (r, _, _), (a, _, _), (b, _, _)) in enumerate(
          zip(gots[i], loops[i], v, l)):
        ok, idx = F._same(g, r)
        if ok:
          continue
        if F._same(a, b)[0]:   # the first value where pyjax's differ and JAX's do not
          name, args, prm = p.ops[k]
          pool = list(batched_inputs(p)) + [x[0] for x in gots[i]]
          ins = [pool[a] for a in args]
          out[i].append(F.Mismatch(p, tier, len(p.inputs) + k, name, "vmap-vs-loop",
                                   f"at {idx}: vmapped {g[idx] if idx else g} vs one by one "
                                   f"{r[idx] if idx else r} (JAX's agree: {a[idx] if idx else a}"
                                   f")", F.explain(name, ins, g, prm)))
        break
  return out
