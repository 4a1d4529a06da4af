"""``shard_map``'s ``check_vma``: along which mesh axes may each output vary?

pyjax's avals carry no varying-manual-axes (vma) types, so the check is a static walk of
the traced body (``infer_vma``): an input varies along the manual mesh axes its in_spec
names; a constant or literal varies along none; ``psum``/``pmax``/``pmin`` (and so
``pmean``) make their result invariant along the axes they reduce over; ``axis_index``
varies along its axis; ``pvary`` (``pcast(..., to='varying')``) adds its axes; every other
collective (``all_gather``, ``psum_scatter``, ``ppermute``, ``all_to_all``, ...) varies
along the union of its operand's axes and its own, as in JAX 0.10; any other primitive
varies along the union of its inputs' axes.  Control flow propagates through its bodies:
``cond`` takes the union over branches (its predicate does not count, as in JAX),
``while``/``scan`` iterate the body to a fixpoint over the carries, and other primitives
carrying one jaxpr (``jit``, ``remat``, custom derivatives, nested ``shard_map``) map
their inputs into it.  ``check_out_vma`` then raises JAX's ``ValueError`` when an output
varies along a manual axis its out_spec leaves out.

Differs from JAX: JAX types values as it traces, so it also rejects a ``scan`` carry
whose vma changes (pyjax takes the fixpoint) and keeps an operand's vma on values built
from constants only (``jnp.zeros_like(x)``, a constant cotangent under ``grad``), which
pyjax's walk finds invariant; pyjax infers only what the out_specs check needs.
"""
from __future__ import annotations

from pyjax._src import core
from pyjax._src.interpreters import batching
from pyjax._src.lax import parallel as _par
from pyjax._src.lax import parallel as _px

_EMPTY = frozenset()
_REDUCTIONS = (_par.psum_p, _par.pmax_p, _par.pmin_p)


def _names(entries):
  """The string axis names among ``entries`` (a name, or a tuple mixing names and
  positional axes)."""
  if not isinstance(entries, (tuple, list)):
    entries = (entries,)
  return frozenset(n for n in entries if isinstance(n, str))


def _sub(j):
  return j.jaxpr if isinstance(j, core.ClosedJaxpr) else j


def _union(vmas):
  out = _EMPTY
  for v in vmas:
    out = out | v
  return out


def infer_vma(jaxpr, in_vmas, manual):
  """The vma (frozenset of manual axis names) of each output of ``jaxpr`` (a Jaxpr or
  ClosedJaxpr) given its inputs' vmas."""
  jaxpr = _sub(jaxpr)
  env = {v: m for v, m in zip(jaxpr.invars, in_vmas)}

  def read(v):
    return _EMPTY if type(v) is core.Literal else env.get(v, _EMPTY)
  for eqn in jaxpr.eqns:
    outs = _eqn_vma(eqn, [read(v) for v in eqn.invars], manual)
    for v, m in zip(eqn.outvars, outs):
      env[v] = m
  return [read(v) for v in jaxpr.outvars]


def _loop(body, consts, carry, n_carry):
  """Iterate ``body`` (consts, carry, rest -> carry, rest) until the carries' vmas stop
  growing; returns the body's outputs at the fixpoint."""
  carry = list(carry)
  while True:
    outs = body(consts, carry)
    new = [c | o for c, o in zip(carry, outs[:n_carry])]
    if new == carry:
      return outs
    carry = new


def _eqn_vma(eqn, ins, manual):
  p, params = eqn.primitive, eqn.params
  n_out = len(eqn.outvars)
  if p in _REDUCTIONS:
    drop = _names(params["axes"])
    return [m - drop for m in ins]
  if p is _px.pvary_p:
    return [ins[0] | (_names(params["axes"]) & manual)]
  getter = batching.axis_name_getters.get(p)
  if getter is not None:   # axis_index and the collectives that keep values varying
    return [_union(ins) | (_names(getter(params)) & manual)] * n_out
  name = p.name
  if name == "cond":
    outs = [_EMPTY] * n_out
    for br in params["branches"]:
      outs = [a | b for a, b in zip(outs, infer_vma(br, ins[1:], manual))]
    return outs
  if name == "while":
    cn, bn = params["cond_nconsts"], params["body_nconsts"]
    bconsts, carry = ins[cn:cn + bn], ins[cn + bn:]
    return _loop(lambda c, k: infer_vma(params["body_jaxpr"], c + k, manual),
                 bconsts, carry, len(carry))
  if name == "scan":
    nc, nk = params["num_consts"], params["num_carry"]
    consts, carry, xs = ins[:nc], ins[nc:nc + nk], ins[nc + nk:]
    return _loop(lambda c, k: infer_vma(params["jaxpr"], c + k + xs, manual),
                 consts, carry, nk)
  for sub in batching._jaxprs_of_params(params):
    if len(sub.invars) == len(ins) and len(sub.outvars) == n_out:
      return infer_vma(sub, ins, manual)
  return [_union(ins)] * n_out


def _spec_axes(spec):
  out = set()
  for e in spec:
    out |= _names(e)
  return out


def check_out_vma(jaxpr, mesh, manual, in_specs, out_specs, fun_name):
  """Raise JAX's ValueError when an output of the shard_map body ``jaxpr`` may vary along
  a manual mesh axis that its out_spec leaves out (the first such output, as JAX).
  ``fun_name`` is the name the message gives the function."""
  in_vmas = [frozenset(_spec_axes(s)) & manual for s in in_specs]
  out_vmas = infer_vma(jaxpr, in_vmas, manual)
  names = tuple(mesh.axis_names)
  for vma, spec in zip(out_vmas, out_specs):
    named = _spec_axes(spec)
    if not (vma & (manual - named)):
      continue
    unmentioned = [n for n in names if n not in named]
    if len(unmentioned) > 1:
      need = ",".join(n for n in names if n in named)
      diff = ",".join(n for n in unmentioned if n in vma)
      got = ",".join(n for n in names if n in vma)
      what = (f"out_specs is {spec} which implies that the corresponding output value is "
              f"only varying across mesh axes {{{need}}} and not {{{diff}}}, but it was "
              f"inferred to be possibly varying over {{{got}}}")
    else:
      what = (f"out_specs is {spec} which implies that the corresponding output value is "
              f"replicated across mesh axis '{unmentioned[0]}', but could not infer "
              "replication over any axes")
    raise ValueError(
        f"shard_map applied to the function '{fun_name}' was given out_specs which "
        "require replication which can't be statically inferred given the mesh:\n\n"
        f"The mesh given has shape {tuple(mesh.devices.shape)} with corresponding axis "
        f"names {names}.\n\n{what}\n\nCheck if these output values are meant to be "
        "replicated over those mesh axes. If not, consider revising the corresponding "
        "out_specs entries. If so, consider disabling the check by passing the "
        "check_vma=False argument to `jax.shard_map`.")
