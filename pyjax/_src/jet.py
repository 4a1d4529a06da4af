"""jet: Taylor-mode higher-order differentiation (``jax.experimental.jet``).

A ``JetInterpreter`` (stackless, like the JVP interpreter) carries, for each of its
tracers, a primal value and its Taylor coefficients ``[x_1, ..., x_K]`` (unscaled:
``x(t) = x_0 + x_1 t + x_2 t^2 + ...``).  A primitive whose operands carry no series is
bound on the parent; otherwise its rule from ``jet_rules`` (keyed by primitive) runs with
the parent current and propagates the truncated series: linear primitives map each
coefficient; products are Cauchy products; ``exp``, ``log``, ``sin``/``cos``,
``logistic`` etc. use the usual recurrences obtained from ``v' = f'(u) u'``; composite
rules re-enter ``jet`` on a simpler function.  ``jit`` calls are inlined, and
custom_jvp/custom_vjp functions are evaluated through their primal definition (as JAX
ignores their rules).  The public ``jet`` scales the series by factorials (its terms are
derivatives), unless ``factorial_scaled=False``.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from pyjax._src import core
from pyjax._src import tree_util
from pyjax._src.lax import lax_api as lax

__all__ = ["jet", "jet_rules"]


class JetRuleNotImplementedError(KeyError, NotImplementedError):
  """No jet rule for a primitive.  A KeyError naming the primitive, as JAX raises (also a
  NotImplementedError)."""


class _ZeroSeries:
  """All coefficients are zero (kept symbolic)."""

  def __repr__(self):
    return "zero_series"


zero_series = _ZeroSeries()


class JetTracer(core.Tracer):
  __slots__ = ("primal", "terms")

  def __init__(self, trace, primal, terms):
    self._trace = trace
    self.primal = primal
    self.terms = terms

  @property
  def aval(self):
    return core.get_aval(self.primal)

  def __repr__(self):
    return f"JetTracer(primal={self.primal!r}, terms={self.terms!r})"


class JetInterpreter(core.Interpreter):
  """Propagates truncated Taylor series of order ``order``."""

  def __init__(self, parent, order):
    self.parent = parent
    self.order = order

  def __repr__(self):
    return "JetTrace"

  def to_primal_terms(self, x):
    if isinstance(x, JetTracer) and x._trace is self:
      return x.primal, x.terms
    if isinstance(x, core.Tracer) and getattr(x._trace, "finished", False):
      core.raise_escaped_tracer(x)
    return x, zero_series

  def process_primitive(self, prim, args, params):
    primals, series = [], []
    for x in args:
      p, s = self.to_primal_terms(x)
      primals.append(p)
      series.append(s)
    if all(s is zero_series for s in series):
      with core.set_interpreter(self.parent):
        return prim.bind(*primals, **params)
    special = _interpreter_rules.get(prim.name)
    if special is not None:
      return special(self, primals, series, params)
    rule = jet_rules.get(prim)
    if rule is None:
      rule = _rule_by_name(prim)
    with core.set_interpreter(self.parent):
      series = [_zeros_series(p, self.order) if s is zero_series else list(s)
                for p, s in zip(primals, series)]
      out, out_series = rule(primals, series, **params)
    if prim.multiple_results:
      return [self._wrap(p, s) for p, s in zip(out, out_series)]
    return self._wrap(out, out_series)

  def _wrap(self, primal, terms):
    if terms is zero_series:
      return primal
    return JetTracer(self, primal, list(terms))


def _zeros_like(x):
  a = core.get_aval(x)
  from pyjax._src.interpreters import ad
  z = ad.scalar_const(0, a.dtype)
  if not a.shape:
    return z
  return lax.broadcast_in_dim(z, tuple(a.shape), ())


def _zeros_series(x, order):
  z = _zeros_like(x)
  return [z] * order


# --- the API ----------------------------------------------------------------------------
def _jet_flat(fun, primals, series, order):
  """Run ``fun`` (flat list -> pytree) on jet tracers; (out primals, out series, tree)
  with zero series instantiated."""
  parent = core.current_interpreter()
  interp = JetInterpreter(parent, order)
  ins = [JetTracer(interp, p, list(s)) for p, s in zip(primals, series)]
  try:
    with core.set_interpreter(interp):
      out = fun(*ins)
    leaves, tree = tree_util.tree_flatten(out)
    ps, ss = [], []
    for o in leaves:
      p, s = interp.to_primal_terms(o)
      ps.append(p)
      ss.append(s)
  finally:
    interp.finished = True
  with core.set_interpreter(parent):
    ss = [_zeros_series(p, order) if s is zero_series else s for p, s in zip(ps, ss)]
  return ps, ss, tree


def jet(fun, primals, series, factorial_scaled=True, **_):
  """Taylor-mode differentiation: ``(fun(*primals), series_out)`` where ``series[i]`` holds
  the derivatives ``(h_1, ..., h_K)`` of the i-th input path and ``series_out`` the
  derivatives of ``fun`` along it (Faa di Bruno), for each output leaf.  With
  ``factorial_scaled=False`` inputs and outputs are plain Taylor coefficients.

  Differs from JAX: custom_jvp/custom_vjp functions and ``jit`` calls inside work (JAX
  leaks a tracer on custom derivatives); an unsupported primitive raises a KeyError
  naming it, as JAX does (the class is also a NotImplementedError)."""
  try:
    order, = set(map(len, series))
  except ValueError:
    raise ValueError("jet terms have inconsistent lengths for different arguments") from None
  for i, (x, terms) in enumerate(zip(primals, series)):
    if not tree_util.treedef_is_leaf(tree_util.tree_structure(x)):
      raise ValueError(f"primal value at position {i} is not an array")
    for j, t in enumerate(terms):
      if not tree_util.treedef_is_leaf(tree_util.tree_structure(t)):
        raise ValueError(f"term {j} for argument {i} is not an array")
  if factorial_scaled:
    series = [[t / float(math.factorial(k + 1)) for k, t in enumerate(terms)]
              for terms in series]
  ps, ss, tree = _jet_flat(fun, list(primals), [list(s) for s in series], order)
  if factorial_scaled:
    ss = [[t * float(math.factorial(k + 1)) for k, t in enumerate(terms)] for terms in ss]
  return tree_util.tree_unflatten(tree, ps), tree_util.tree_unflatten(tree, ss)


def jet2(fun, primals, series):
  """``jet`` on unscaled Taylor coefficients (for composite rules)."""
  ps, ss, tree = _jet_flat(fun, list(primals), [list(s) for s in series], len(series[0]))
  return tree_util.tree_unflatten(tree, ps), tree_util.tree_unflatten(tree, ss)


# --- rules ------------------------------------------------------------------------------
jet_rules = {}           # primitive -> rule(primals, series, **params) -> (out, series_out)
jet_rules_by_name = {}   # the same, keyed by primitive name (filled below)


def _zero_prop(prim, primals, series, **params):
  return prim.bind(*primals, **params), zero_series


def _linear_prop(prim, primals, series, **params):
  out = prim.bind(*primals, **params)
  terms = [prim.bind(*ts, **params) for ts in zip(*series)]
  if prim.multiple_results:
    terms = [list(t) for t in zip(*terms)]
  return out, terms


def _first_operand_linear(prim, primals, series, **params):
  """Linear in the first operand; the others (indices) pass through."""
  x, *rest = primals
  out = prim.bind(x, *rest, **params)
  return out, [prim.bind(t, *rest, **params) for t in series[0]]


def _dynamic_update_slice(prim, primals, series, **params):
  x, u, *idx = primals
  out = prim.bind(x, u, *idx, **params)
  return out, [prim.bind(a, b, *idx, **params) for a, b in zip(series[0], series[1])]


def _scatter_add(prim, primals, series, **params):
  x, idx, u = primals
  out = prim.bind(x, idx, u, **params)
  return out, [prim.bind(a, idx, b, **params) for a, b in zip(series[0], series[2])]


def _chain(c, u, v0):
  """Coefficients of v with v' = c u' (c's coefficients known up to the needed order)."""
  v = [v0] + [None] * (len(u) - 1)
  for k in range(1, len(v)):
    v[k] = sum(j * c[k - j] * u[j] for j in range(1, k + 1)) / k
  return v


def _deriv_rule(prim, deriv, primals, series, **params):
  x, = primals
  out = prim.bind(x, **params)
  c0, cs = jet2(deriv, (x,), (series[0],))
  v = _chain([c0] + list(cs), [x] + series[0], out)
  return v[0], v[1:]


def _comp_rule(comp, primals, series, **params):
  return jet2(comp, primals, series)


def _exp_rule(primals, series, **_):
  x, = primals
  u = [x] + series[0]
  v = [lax.exp(x)] + [None] * len(series[0])
  for k in range(1, len(v)):
    v[k] = sum(j * v[k - j] * u[j] for j in range(1, k + 1)) / k
  return v[0], v[1:]


def _log_rule(primals, series, **_):
  x, = primals
  u = [x] + series[0]
  v = [lax.log(x)] + [None] * len(series[0])
  for k in range(1, len(v)):
    conv = sum(j * v[j] * u[k - j] for j in range(1, k))
    v[k] = (u[k] - conv / k) / u[0]
  return v[0], v[1:]


def _pow_rule(primals, series, **_):
  x, y = primals
  lg, lg_terms = jet2(lambda a, b: lax.mul(b, lax.log(a)), primals, series)
  u = [lg] + list(lg_terms)
  v = [lax.pow(x, y)] + [None] * len(lg_terms)
  for k in range(1, len(v)):
    v[k] = sum(j * v[k - j] * u[j] for j in range(1, k + 1)) / k
  return v[0], v[1:]


def _power(x, n):
  if n < 0:
    return _power(1 / x, -n)
  if n == 0:
    return 1
  if n % 2 == 0:
    return _power(x * x, n // 2)
  return x * _power(x * x, (n - 1) // 2)


def _integer_pow_rule(primals, series, *, y):
  if y == 0:
    import pyjax.numpy as jnp
    return jet2(jnp.ones_like, primals, series)
  return jet2(lambda x: _power(x, y), primals, series)


def _logistic_rule(primals, series, **_):
  x, = primals
  u = [x] + series[0]
  v = [lax.logistic(x)] + [None] * len(series[0])
  e = [v[0] * (1 - v[0])] + [None] * len(series[0])   # the derivative's coefficients
  for k in range(1, len(v)):
    v[k] = sum(j * e[k - j] * u[j] for j in range(1, k + 1)) / k
    e[k] = (1 - v[0]) * v[k] - sum(v[j] * v[k - j] for j in range(1, k + 1))
  return v[0], v[1:]


def _tanh_rule(primals, series, **_):
  # tanh(x) = 2 logistic(2x) - 1
  x, = primals
  out, terms = _logistic_rule((2 * x,), ([2 * t for t in series[0]],))
  return 2 * out - 1, [2 * t for t in terms]


def _atan2_rule(primals, series, **_):
  x, y = primals
  out = lax.atan2(x, y)
  q, q_terms = jet2(lax.div, primals, series)
  c0, cs = jet2(lambda z: lax.div(lax.full_like(z, 1), 1 + lax.square(z)), (q,), (q_terms,))
  v = _chain([c0] + list(cs), [q] + list(q_terms), out)
  return v[0], v[1:]


def _div_rule(primals, series, **_):
  x, y = primals
  u, w = [x] + series[0], [y] + series[1]
  v = [None] * len(u)
  for k in range(len(v)):
    conv = sum(v[j] * w[k - j] for j in range(k))
    v[k] = (u[k] - conv) / w[0]
  return v[0], v[1:]


def _sin_cos(sign, fs, which, primals, series, **_):
  x, = primals
  u = [x] + series[0]
  s = [fs[0](x)] + [None] * len(series[0])
  c = [fs[1](x)] + [None] * len(series[0])
  for k in range(1, len(s)):
    s[k] = sum(j * u[j] * c[k - j] for j in range(1, k + 1)) / k
    c[k] = sign * sum(j * u[j] * s[k - j] for j in range(1, k + 1)) / k
  out = (s, c)[which]
  return out[0], out[1:]


def _bilinear_rule(prim, primals, series, **params):
  x, y = primals
  u, w = [x] + series[0], [y] + series[1]
  v = []
  for k in range(len(u)):
    terms = [prim.bind(u[j], w[k - j], **params) for j in range(k + 1)]
    acc = terms[0]
    for t in terms[1:]:
      acc = acc + t
    v.append(acc)
  return v[0], v[1:]


def _erf_inv_rule(primals, series, **_):
  x, = primals
  u = [x] + series[0]
  K = len(series[0])
  out = lax.erf_inv(x)
  v = [out] + [None] * K
  const = np.sqrt(np.pi) / 2.
  # erfinv'(x) = const * exp(erfinv(x)^2): propagate its series alongside v
  sq = [lax.square(out)] + [None] * K
  ex = [lax.exp(sq[0])] + [None] * K
  c = [const * ex[0]] + [None] * K
  for k in range(1, K + 1):
    v[k] = sum(j * c[k - j] * u[j] for j in range(1, k + 1)) / k
    if k == K:
      break
    sq[k] = sum(v[k - j] * v[j] for j in range(k + 1))
    ex[k] = sum(j * ex[k - j] * sq[j] for j in range(1, k + 1)) / k
    c[k] = const * ex[k]
  return v[0], v[1:]


def _reduce_chooser(prim, primals, series, **params):
  x, = primals
  out = prim.bind(x, **params)
  axes = params["axes"]
  shape = [1 if i in axes else d for i, d in enumerate(core.get_aval(x).shape)]
  dt = core.get_aval(series[0][0]).dtype
  loc = lax.convert_element_type(lax.eq(x, lax.reshape(out, tuple(shape))), dt)
  counts = lax.reduce_sum(loc, tuple(axes))
  return out, [lax.div(lax.reduce_sum(lax.mul(g, loc), tuple(axes)), counts)
               for g in series[0]]


def _abs_rule(primals, series, **params):
  x, = primals
  out = lax.abs(x)
  sign = lax.select(lax.lt(x, lax.full_like(x, 0)), lax.full_like(x, -1), lax.full_like(x, 1))
  return out, [sign * t for t in series[0]]


def _select_n_rule(primals, series, **_):
  which, *cases = primals
  out = lax.select_n(which, *cases)
  return out, [lax.select_n(which, *ts) for ts in zip(*series[1:])]


def _max_min_rule(is_max, primals, series, **_):
  import pyjax.numpy as jnp
  x, y = jnp.broadcast_arrays(*primals)
  pick_x = (x > y) if is_max else (x < y)
  tie = x == y
  out = lax.select(pick_x, x, y)

  def term(a, b):
    a, b = jnp.broadcast_arrays(a, b)
    return lax.select(tie, (a + b) / 2, lax.select(pick_x, a, b))
  return out, [term(a, b) for a, b in zip(series[0], series[1])]


def _cumulative_rule(combine, primals, series, *, axis, reverse):
  from pyjax._src.lax.control_flow.associative_scan import associative_scan
  return jet2(functools.partial(associative_scan, combine, axis=axis, reverse=reverse),
              primals, series)


def _call_rule(interp, primals, series, params):
  """custom_jvp_call / custom_vjp_call: the primal definition, on this interpreter."""
  closed = params["call_jaxpr"]
  args = [p if s is zero_series else JetTracer(interp, p, list(s))
          for p, s in zip(primals, series)]
  with core.set_interpreter(interp):
    return core.eval_jaxpr(closed.jaxpr, closed.consts, *args)


def _inline_rule(param):
  def rule(interp, primals, series, params):
    j = params[param]
    jaxpr, consts = (j.jaxpr, j.consts) if isinstance(j, core.ClosedJaxpr) else (j, [])
    args = [p if s is zero_series else JetTracer(interp, p, list(s))
            for p, s in zip(primals, series)]
    with core.set_interpreter(interp):
      return core.eval_jaxpr(jaxpr, consts, *args)
  return rule


_interpreter_rules = {
    "custom_jvp_call": _call_rule, "custom_vjp_call": _call_rule,
    "jit": _inline_rule("jaxpr"), "remat2": _inline_rule("jaxpr"),
}


def _fill_rules():
  P = functools.partial
  r = jet_rules_by_name
  for n in ["le", "lt", "gt", "ge", "eq", "ne", "not", "and", "or", "xor", "floor", "ceil",
            "round", "sign", "stop_gradient", "is_finite", "shift_left",
            "shift_right_arithmetic", "shift_right_logical", "bitcast_convert_type",
            "argmax", "argmin", "iota", "population_count", "clz", "random_bits"]:
    r[n] = ("zero",)
  for n in ["neg", "real", "complex", "conj", "imag", "add", "add_any", "sub",
            "convert_element_type", "broadcast_in_dim", "concatenate", "split", "stack",
            "unstack", "pad", "reshape", "squeeze", "rev", "transpose", "slice",
            "reduce_sum", "reduce_window_sum", "fft", "copy", "device_put",
            "cumsum", "sharding_constraint", "name", "reduce_precision",
            "optimization_barrier"]:
    r[n] = ("linear",)
  r["dynamic_slice"] = ("first",)
  r["gather"] = ("first",)
  r["dynamic_update_slice"] = ("dus",)
  r["scatter-add"] = ("scatter_add",)
  r["exp"] = _exp_rule
  r["log"] = _log_rule
  r["pow"] = _pow_rule
  r["integer_pow"] = _integer_pow_rule
  r["logistic"] = _logistic_rule
  r["tanh"] = _tanh_rule
  r["atan2"] = _atan2_rule
  r["div"] = _div_rule
  r["sin"] = P(_sin_cos, -1, (lax.sin, lax.cos), 0)
  r["cos"] = P(_sin_cos, -1, (lax.sin, lax.cos), 1)
  r["sinh"] = P(_sin_cos, 1, (lax.sinh, lax.cosh), 0)
  r["cosh"] = P(_sin_cos, 1, (lax.sinh, lax.cosh), 1)
  r["erf_inv"] = _erf_inv_rule
  r["abs"] = _abs_rule
  r["select_n"] = _select_n_rule
  r["max"] = P(_max_min_rule, True)
  r["min"] = P(_max_min_rule, False)
  r["reduce_max"] = ("chooser",)
  r["reduce_min"] = ("chooser",)
  for n in ["mul", "dot_general", "conv_general_dilated"]:
    r[n] = ("bilinear",)
  r["erf"] = ("deriv", lambda x: lax.mul(lax.full_like(x, 2. / np.sqrt(np.pi)),
                                         lax.exp(lax.neg(lax.square(x)))))
  comps = {
      "expm1": lambda x: lax.exp(x) - 1,
      "log1p": lambda x: lax.log(1 + x),
      "sqrt": lambda x: x ** 0.5,
      "square": lambda x: x * x,
      "rsqrt": lambda x: x ** -0.5,
      "asinh": lambda x: lax.log(x + lax.sqrt(lax.square(x) + 1)),
      "acosh": lambda x: lax.log(x + lax.sqrt(lax.square(x) - 1)),
      "atanh": lambda x: 0.5 * lax.log(lax.div(1 + x, 1 - x)),
      "erfc": lambda x: 1 - lax.erf(x),
      "rem": lambda x, y: x - y * lax.floor(x / y),
      "clamp": lambda a, x, b: lax.min(lax.max(a, x), b),
  }
  for n, comp in comps.items():
    r[n] = P(_comp_rule, comp)
  r["cumprod"] = P(_cumulative_rule, lax.mul)
  r["cummax"] = P(_cumulative_rule, lax.max)
  r["cummin"] = P(_cumulative_rule, lax.min)


_fill_rules()


def _resolve(prim, spec):
  if callable(spec):
    return spec
  kind = spec[0]
  P = functools.partial
  if kind == "zero":
    return P(_zero_prop, prim)
  if kind == "linear":
    return P(_linear_prop, prim)
  if kind == "first":
    return P(_first_operand_linear, prim)
  if kind == "dus":
    return P(_dynamic_update_slice, prim)
  if kind == "scatter_add":
    return P(_scatter_add, prim)
  if kind == "chooser":
    return P(_reduce_chooser, prim)
  if kind == "bilinear":
    return P(_bilinear_rule, prim)
  if kind == "deriv":
    return P(_deriv_rule, prim, spec[1])
  raise AssertionError(spec)


def _rule_by_name(prim):
  """The rule for ``prim`` from the table keyed by name (resolved once per primitive)."""
  spec = jet_rules_by_name.get(prim.name)
  if spec is None:
    raise JetRuleNotImplementedError(prim)
  rule = jet_rules[prim] = _resolve(prim, spec)
  return rule
