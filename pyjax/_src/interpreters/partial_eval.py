"""Partial evaluation (JAX's ``jax.interpreters.partial_eval`` API) on pyjax's staging.

``trace_to_jaxpr_nounits(fun, pvals)`` runs ``fun`` (a ``linear_util.WrappedFun`` of flat
arguments) with some inputs known (values) and others unknown (avals): every operation
whose inputs are all known runs now, on the enclosing interpreter; the others are staged
into a jaxpr.  ``trace_to_jaxpr_dynamic`` stages everything.  ``dce_jaxpr`` drops unused
outputs and the equations only they need; ``convert_constvars_jaxpr`` makes constants
leading inputs.

Differences from JAX: the staged jaxpr's tracers are pyjax's staging tracers (so
``JaxprTracer`` and ``DynamicJaxprTracer`` are one class); the custom partial-eval and
DCE rule tables JAX consults do not exist (pyjax's executables do their own DCE).
"""
from __future__ import annotations

import numpy as np

from pyjax._src import core
from pyjax._src.lax.control_flow import common as _cf_common

DynamicJaxprTracer = core.StagingTracer
JaxprTracer = core.StagingTracer
Val = object


class PartialVal(tuple):
  """``(aval, None)`` for an unknown value, ``(None, value)`` for a known one."""

  def __new__(cls, xs):
    pv, const = xs
    if (pv is None) == (const is None) and not (pv is None and const is None):
      raise ValueError("PartialVal holds exactly one of an aval and a known value")
    return tuple.__new__(cls, xs)

  @classmethod
  def known(cls, const):
    return PartialVal((None, const))

  @classmethod
  def unknown(cls, aval):
    return PartialVal((aval, None))

  def is_known(self):
    return self[0] is None

  def get_known(self):
    """The known value, or None."""
    return self[1] if self[0] is None else None

  def get_aval(self):
    """The aval: the unknown's, or the known value's."""
    return core.get_aval(self[1]) if self[0] is None else self[0]


class PartialEvalInterpreter(core.StagingInterpreter):
  """Stages only the operations that touch an unknown value (one of its own tracers);
  operations on known values are bound on the parent (computed now, or by an enclosing
  transformation)."""

  def __repr__(self):
    return "JaxprTrace"

  def process_primitive(self, prim, args, params):
    for x in args:
      if isinstance(x, core.StagingTracer) and x._trace is self:
        return super().process_primitive(prim, args, params)
    with core.set_interpreter(self.parent):
      return prim.bind(*args, **params)


def _call(fun, args):
  call = getattr(fun, "call_wrapped", None)
  return call(*args) if call is not None else fun(*args)


def _new_arg(interp, aval):
  """The argument tracer of ``aval``; for an aval of a key dtype (``ShapedArray(shape,
  key<fry>)``, as flax's scan builds them) a key array over a ``uint32`` argument with the
  key shape trailing: pyjax stages key arrays as their raw data."""
  impl = getattr(aval.dtype, "impl", None) if getattr(aval.dtype, "_pyjax_extended", False) else None
  if impl is None or not hasattr(impl, "key_shape"):
    return interp.new_arg(aval)
  from pyjax._src.avals import ShapedArray
  from pyjax._src.random import keys
  data = interp.new_arg(ShapedArray(tuple(aval.shape) + tuple(impl.key_shape), np.dtype(np.uint32)))
  return keys.PRNGKeyArray(impl, data)


def trace_to_jaxpr_nounits(fun, pvals, instantiate=False):
  """Partially evaluate ``fun`` on ``pvals``.  Returns ``(jaxpr, out_pvals, consts)``:
  the jaxpr of the unknown part (its invars are the unknown inputs in order, its outvars
  the unknown outputs, its constvars bound to ``consts``), and one ``PartialVal`` per
  output (known outputs carry their values).  ``instantiate`` (a bool or one per output)
  makes known outputs unknown outputs of the jaxpr."""
  pvals = list(pvals)
  interp = PartialEvalInterpreter(core.current_interpreter(),
                                  getattr(fun, "debug_info", None))
  args = [_new_arg(interp, pv[0]) if pv[0] is not None else pv[1] for pv in pvals]
  try:
    with core.set_interpreter(interp):
      outs = list(_call(fun, args))
    if isinstance(instantiate, bool):
      instantiate = [instantiate] * len(outs)
    staged, out_pvals = [], []
    for x, inst in zip(outs, instantiate):
      mine = isinstance(x, core.StagingTracer) and x._trace is interp
      if mine or inst:
        staged.append(x)
        out_pvals.append(PartialVal.unknown(core.get_aval(x)))
      else:
        out_pvals.append(PartialVal.known(x))
    jaxpr, consts = interp.to_jaxpr(staged)
  finally:
    interp.finished = True
  return jaxpr, out_pvals, consts


def trace_to_jaxpr_dynamic(fun, in_avals, *, keep_inputs=None, lower=False,
                           auto_dce=False):
  """Stage ``fun`` on ``in_avals``: ``(jaxpr, out_avals, consts)``; ``keep_inputs`` (one
  bool per input) drops the inputs marked False from the jaxpr's invars."""
  del lower, auto_dce
  interp = core.StagingInterpreter(core.current_interpreter(),
                                   getattr(fun, "debug_info", None))
  args = [_new_arg(interp, a) for a in in_avals]
  try:
    with core.set_interpreter(interp):
      outs = list(_call(fun, args))
    jaxpr, consts = interp.to_jaxpr(outs)
  finally:
    interp.finished = True
  if keep_inputs is not None:
    jaxpr = jaxpr.replace(invars=[v for v, k in zip(jaxpr.invars, keep_inputs) if k])
  return jaxpr, [core.get_aval(x) for x in outs], consts


def dce_jaxpr(jaxpr, used_outputs, instantiate=False):
  """``(jaxpr, used_inputs)``: ``jaxpr`` without the outputs not in ``used_outputs`` and
  the equations (without effects) only they needed; inputs kept where used or where
  ``instantiate`` says so."""
  if isinstance(used_outputs, bool):
    used_outputs = [used_outputs] * len(jaxpr.outvars)
  return _cf_common.dce_jaxpr(jaxpr, list(used_outputs), instantiate)


def convert_constvars_jaxpr(jaxpr):
  """``jaxpr`` with its constvars turned into leading invars."""
  return jaxpr.replace(constvars=[], invars=list(jaxpr.constvars) + list(jaxpr.invars))


def close_jaxpr(jaxpr):
  """A ClosedJaxpr of a jaxpr without constvars."""
  return core.ClosedJaxpr(jaxpr, ())
