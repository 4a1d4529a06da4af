"""checkify: functionalized run-time checks (``jax.experimental.checkify``).

``checkify(f, errors)`` stages ``f`` into a jaxpr (its arguments are closed over, as JAX
does, so they stay concrete or tracers of enclosing transformations) and then runs that
jaxpr with an *error-threading interpreter*: each equation is re-bound on the current
interpreter by a rule from ``error_checks`` (keyed by primitive) that also receives and
returns the current ``Error`` value.  Automatic checks are rules (NaN outputs, out-of-
bounds indices, division by zero); ``check_p`` (what ``check`` binds) is discharged into
the error; higher-order primitives (``jit``, ``cond``, ``while``, ``scan``, ``remat2``,
``custom_jvp_call``, ``custom_vjp_call``) get their inner jaxprs checkified, the error
travelling through them as extra operands and results.  Because the rules bind on the
current interpreter, ``jit``, ``vmap`` and ``grad`` compose with ``checkify`` in any order.

An ``Error`` is a pytree: per error kind (``ErrorEffect``: the exception class and the
shapes of its payload) a boolean ``_pred``, an int32 ``_code`` (which check failed first:
codes are handed out in tracing order) and a payload (the values a message formats); the
static ``_metadata`` maps each code to the exception's pytree structure.

Outside ``checkify`` a ``check`` raises ``JaxRuntimeError`` eagerly, and staging one
(``jit`` of a function with an un-functionalized ``check``) raises JAX's ValueError when
the program runs (JAX raises it when lowering).
"""
from __future__ import annotations

import functools
import itertools

import numpy as np

from pyjax._src import core, dtypes
from pyjax._src import tree_util
from pyjax._src.interpreters import ad
from pyjax._src.interpreters import batching
from pyjax._src.runtime.array import Array

__all__ = [
    "Error", "ErrorCategory", "JaxRuntimeError", "all_checks", "automatic_checks", "check",
    "check_error", "checkify", "debug_check", "div_checks", "float_checks",
    "index_checks", "init_error", "nan_checks", "user_checks",
]


def _jnp():
  import pyjax.numpy as jnp
  return jnp


def _lax():
  from pyjax._src.lax import lax_api
  return lax_api


def _traceback_info():
  """Where the check was created (``file:line:col (function)`` of the user's frame)."""
  try:
    return core.summarize_source(core._state.source_info or core.user_frame())
  except Exception:  # noqa: BLE001  -- best effort
    return None


# --- exceptions -------------------------------------------------------------------------
class JaxException(Exception):
  """An error a check can report, carrying the values its message formats (its pytree
  leaves) and where it was created (``traceback_info``: a source-location string; JAX
  keeps a traceback object)."""

  def __init__(self, traceback_info):
    self.traceback_info = traceback_info

  def __init_subclass__(cls, **kw):
    super().__init_subclass__(**kw)
    tree_util.register_pytree_node_class(cls)

  def tree_flatten(self):
    return [], self.traceback_info

  @classmethod
  def tree_unflatten(cls, aux, children):
    del children
    return cls(aux)

  def get_effect_type(self):
    raise NotImplementedError(type(self).__name__)


class ErrorEffect(core.Effect):
  """The kind of an error: its exception class and the (shape, dtype, weak_type) of each
  payload value.  Hashable and ordered (errors are pytrees with dicts keyed by it)."""
  __slots__ = ("error_type", "shape_dtypes")

  def __init__(self, error_type, shape_dtypes):
    super().__init__("ErrorEffect", False)
    self.error_type = error_type
    self.shape_dtypes = tuple(shape_dtypes)

  def _key(self):
    return (self.error_type, self.shape_dtypes)

  def __eq__(self, other):
    return type(other) is ErrorEffect and self._key() == other._key()

  def __hash__(self):
    return hash(self._key())

  def __lt__(self, other):
    def k(e):
      return (str(e.error_type), tuple((s, str(d), w) for s, d, w in e.shape_dtypes))
    return k(self) < k(other)

  def __repr__(self):
    sds = ", ".join(f"ShapeDtypeStruct(shape={s}, dtype={np.dtype(d).name}"
                    + (", weak_type=True)" if w else ")") for s, d, w in self.shape_dtypes)
    return (f"ErrorEffect(error_type={self.error_type!r}, shape_dtypes=("
            f"{sds}{',' if len(self.shape_dtypes) == 1 else ''}))")

  __str__ = __repr__


def _sd(x):
  a = core.get_aval(x)
  return (tuple(a.shape), np.dtype(a.dtype), bool(a.weak_type))


class DivisionByZeroError(JaxException):
  def __str__(self):
    return "division by zero"

  def get_effect_type(self):
    return ErrorEffect(DivisionByZeroError, ())


class NaNError(JaxException):
  def __init__(self, traceback_info, primitive_name):
    super().__init__(traceback_info)
    self.prim = primitive_name

  def tree_flatten(self):
    return [], (self.traceback_info, self.prim)

  @classmethod
  def tree_unflatten(cls, aux, children):
    return cls(*aux)

  def get_effect_type(self):
    return ErrorEffect(NaNError, ())

  def __str__(self):
    return f"nan generated by primitive: {self.prim}."


class OOBError(JaxException):
  def __init__(self, traceback_info, primitive_name, operand_shape, payload):
    super().__init__(traceback_info)
    self.prim = primitive_name
    self.operand_shape = operand_shape
    self._payload = payload

  def tree_flatten(self):
    return [self._payload], (self.traceback_info, self.prim, self.operand_shape)

  @classmethod
  def tree_unflatten(cls, aux, children):
    return cls(*aux, payload=children[0])

  def __str__(self):
    p = self._payload
    return (f"out-of-bounds indexing for array of shape {self.operand_shape}: index {p[0]} "
            f"is out of bounds for axis {p[1]} with size {p[2]}. ")

  def get_effect_type(self):
    return ErrorEffect(OOBError, (((3,), np.dtype(np.int32), False),))


class FailedCheckError(JaxException):
  def __init__(self, traceback_info, fmt_string, *a, **k):
    super().__init__(traceback_info)
    self.fmt_string = fmt_string
    self.args = a
    self.kwargs = k

  def tree_flatten(self):
    return (self.args, self.kwargs), (self.traceback_info, self.fmt_string)

  @classmethod
  def tree_unflatten(cls, aux, children):
    args, kwargs = children
    return cls(*aux, *args, **kwargs)

  def __str__(self):
    return self.fmt_string.format(*self.args, **self.kwargs) + " (`check` failed)"

  def get_effect_type(self):
    vals = tree_util.tree_leaves((self.args, self.kwargs))
    return ErrorEffect(FailedCheckError, tuple(_sd(x) for x in vals))


class BatchedError(JaxException):
  """The errors of a batched ``Error`` (from ``vmap`` of a checkified function), one per
  failing batch index."""

  def __init__(self, error_mapping):
    self.error_mapping = error_mapping
    super().__init__(next(iter(error_mapping.values())).traceback_info)

  def __str__(self):
    return "\n".join(f"at mapped index {', '.join(map(str, idx))}: {e}"
                     for idx, e in self.error_mapping.items())


class JaxRuntimeError(ValueError):
  """Raised by ``Error.throw``, ``check_error`` and a failing ``check`` outside
  ``checkify`` (a ValueError, as JAX's)."""


ErrorCategory = type


# --- the Error value --------------------------------------------------------------------
class _Metadata(dict):
  """code -> exception treedef; hashable so an Error's treedef can key caches."""

  def __hash__(self):
    return hash(frozenset(self.items()))


class Error:
  """A functional error value returned by ``checkify``-ed functions.  ``get()`` is the
  message of the first failed check (None if none failed); ``throw()`` raises it as
  ``JaxRuntimeError``; ``get_exception()`` returns the exception object.  For batched
  errors (``vmap`` of a checkified function) the message lists each failing index
  ("at mapped index i: ...")."""
  __slots__ = ("_pred", "_code", "_metadata", "_payload")

  def __init__(self, pred, code, metadata, payload):
    object.__setattr__(self, "_pred", pred)
    object.__setattr__(self, "_code", code)
    object.__setattr__(self, "_metadata", _Metadata(metadata))
    object.__setattr__(self, "_payload", payload)

  def __setattr__(self, k, v):
    raise AttributeError("Error is immutable")

  def get(self):
    """The error message, or None if no check failed."""
    exc = self.get_exception()
    return None if exc is None else str(exc)

  def get_exception(self):
    """The Python exception of the first failed check, or None."""
    if any(np.shape(v) for v in self._pred.values()):
      return self._get_batched_exception()
    best = None
    for eff, code in self._code.items():
      if bool(np.asarray(self._pred[eff])):
        c = int(np.asarray(code))
        if best is None or c < best[0]:
          best = (c, eff)
    if best is None:
      return None
    c, eff = best
    return tree_util.tree_unflatten(self._metadata[c], self._payload[eff])

  def _get_batched_exception(self):
    preds = {e: np.asarray(p) for e, p in self._pred.items()}
    codes = {e: np.asarray(c) for e, c in self._code.items()}
    shape = np.shape(next(iter(preds.values())))
    mapping = {}
    for idx in np.ndindex(*shape):
      best = None
      for eff in codes:
        p, c = preds[eff], codes[eff]
        if bool(p[idx] if np.ndim(p) else p):
          ci = int(c[idx] if np.ndim(c) else c)
          if best is None or ci < best[0]:
            best = (ci, eff)
      if best is not None:
        ci, eff = best
        payload = tree_util.tree_map(lambda x, i=idx: np.asarray(x)[i] if np.ndim(x) else x,
                                     self._payload[eff])
        mapping[idx] = tree_util.tree_unflatten(self._metadata[ci], payload)
    return BatchedError(mapping) if mapping else None

  def throw(self):
    """Raise ``JaxRuntimeError`` if a check failed (functionalized under checkify)."""
    _check_error(self)

  def __str__(self):
    return f"Error({self.get()})"

  def __repr__(self):
    return (f"Error(_pred={self._pred}, _code={self._code}, _metadata={dict(self._metadata)}, "
            f"_payload={self._payload})")

  # internal helpers
  def _update(self, effect, pred, code, metadata, payload):
    return Error({**self._pred, effect: pred}, {**self._code, effect: code},
                 {**self._metadata, **metadata}, {**self._payload, effect: payload})

  def _replace(self, **kw):
    d = dict(pred=self._pred, code=self._code, metadata=self._metadata,
             payload=self._payload)
    d.update({k.lstrip("_"): v for k, v in kw.items()})
    return Error(d["pred"], d["code"], d["metadata"], d["payload"])

  def _add_placeholder_effects(self, effects):
    """This error with an entry (never set) for every kind in ``effects``."""
    pred, code, payload = dict(self._pred), dict(self._code), dict(self._payload)
    for eff in effects:
      if eff not in pred:
        pred[eff] = _bool_const(False)
        code[eff] = _code_const(-1)
        payload[eff] = [_placeholder(s, d, w) for s, d, w in eff.shape_dtypes]
    return Error(pred, code, self._metadata, payload)

  def tree_flatten(self):
    return (self._pred, self._code, self._payload), self._metadata

  @classmethod
  def tree_unflatten(cls, metadata, children):
    pred, code, payload = children
    return cls(pred, code, metadata, payload)


tree_util.register_pytree_node_class(Error)

init_error = Error({}, {}, {}, {})
_next_code = itertools.count(1).__next__


def _bool_const(v):
  return ad.scalar_const(bool(v), np.dtype(np.bool_))


def _code_const(c):
  return ad.scalar_const(int(c), np.dtype(np.int32), weak_type=True)


def _placeholder(shape, dtype, weak):
  one = ad.scalar_const(1, np.dtype(dtype), weak)
  if not shape:
    return one
  from pyjax._src.lax import shapes
  with core.set_interpreter(core.eval_interpreter):
    return shapes.broadcast_in_dim_p.bind(one, shape=tuple(shape), broadcast_dimensions=(),
                                          sharding=None)


def assert_func(error, pred, new_error):
  """``error`` updated with ``new_error`` (a JaxException) where ``pred`` is true."""
  code = _next_code()
  effect = new_error.get_effect_type()
  payload, treedef = tree_util.tree_flatten(new_error)
  return update_error(error, pred, code, {code: treedef}, payload, effect)


def update_error(error, pred, code, metadata, payload, effect):
  """Merge one error kind into ``error``: a failure already recorded wins (its code and
  payload are kept).  The operations are JAX's, so jaxprs print the same equations."""
  lax = _lax()
  old = error._pred.get(effect, False)
  if isinstance(old, bool) and isinstance(pred, (bool, np.bool_)):
    out_pred = _bool_const(old or bool(pred))
  else:
    out_pred = lax.bitwise_or(old, pred)
  out_code = lax.select(old, error._code.get(effect, -1), code)
  cur = error._payload.get(effect)
  if cur is None:
    out_payload = list(payload)
  else:
    out_payload = [lax.select(_bcast_pred(old, p), o, p) for o, p in zip(cur, payload)]
  return error._update(effect, out_pred, out_code, metadata, out_payload)


def _bcast_pred(pred, like):
  """``pred`` broadcast to ``like``'s shape (select needs equal shapes)."""
  shape = core.get_aval(like).shape
  pshape = core.get_aval(pred).shape
  if tuple(shape) == tuple(pshape):
    return pred
  from pyjax._src.lax import shapes
  return shapes.broadcast_in_dim_p.bind(pred, shape=tuple(shape),
                                        broadcast_dimensions=tuple(range(len(pshape))),
                                        sharding=None)


def _reduce_any_error(error):
  """A batched error reduced to one: per kind, the entry of the last failing index (JAX's
  choice: the last index of a stable sort of the predicates)."""
  jnp = _jnp()
  out = init_error
  for eff in error._pred:
    preds, codes, payload = error._pred[eff], error._code[eff], error._payload[eff]
    idx = jnp.argsort(preds)[-1]
    pick = lambda x, i=idx: x[i]  # noqa: E731
    out = out._update(eff, pick(preds), pick(codes), {}, [pick(p) for p in payload])
  return out._replace(_metadata=error._metadata)


# --- check_p ----------------------------------------------------------------------------
check_p = core.Primitive("check")
check_p.multiple_results = True
check_p.param_printer = lambda params: {"debug": params["debug"]}

functionalization_error_msg = (
    "Cannot abstractly evaluate a checkify.check which was not functionalized. This "
    "probably means you tried to stage (jit/scan/pmap/...) a `check` without "
    "functionalizing it through `checkify.checkify`.")


@check_p.def_impl
def _check_impl(*args, err_tree, debug):
  if debug:
    return []
  error = tree_util.tree_unflatten(err_tree, args)
  exc = error.get_exception()
  if exc is not None:
    raise JaxRuntimeError(str(exc)) from exc
  return []


@check_p.def_effectful_abstract_eval
def _check_abstract_eval(*avals, err_tree, debug):
  del debug
  return [], set(tree_util.tree_unflatten(err_tree, avals)._pred.keys())


def _check_backend_impl(*bufs, err_tree, debug):
  """A ``check`` inside a compiled program: a no-op for ``debug_check``, else JAX's
  functionalization ValueError."""
  if debug:
    return []
  raise ValueError(functionalization_error_msg)


def _register_backend():
  from pyjax._src.backends.cpu.eager import registry
  registry.impls.setdefault("check", _check_backend_impl)


_register_backend()


def _check_batch(args, dims, *, err_tree, debug):
  size = next(core.get_aval(x).shape[d] for x, d in zip(args, dims) if d is not None)
  args = [batching.bdim_at_front(x, d, size) for x, d in zip(args, dims)]
  _check_error(tree_util.tree_unflatten(err_tree, args), debug=debug)
  return [], []


def _check_jvp(primals, tangents, *, err_tree, debug):
  check_p.bind(*primals, err_tree=err_tree, debug=debug)
  return [], []


batching.primitive_batchers[check_p] = _check_batch
ad.primitive_jvps[check_p] = _check_jvp


def _check_error(error, *, debug=False):
  if any(np.shape(v) for v in error._pred.values()):
    error = _reduce_any_error(error)
  leaves, tree = tree_util.tree_flatten(error)
  return check_p.bind(*leaves, err_tree=tree, debug=debug)


# --- the public API ---------------------------------------------------------------------
user_checks = frozenset({FailedCheckError})
nan_checks = frozenset({NaNError})
index_checks = frozenset({OOBError})
div_checks = frozenset({DivisionByZeroError})
float_checks = nan_checks | div_checks
automatic_checks = float_checks | index_checks
all_checks = automatic_checks | user_checks


def _is_scalar_pred(pred):
  if isinstance(pred, bool):
    return True
  return (isinstance(pred, Array) and tuple(pred.shape) == ()
          and np.dtype(pred.dtype) == np.dtype(np.bool_))


def _check(pred, msg, debug, *fmt_args, **fmt_kwargs):
  if not _is_scalar_pred(pred):
    name = "debug_check" if debug else "check"
    raise TypeError(f"{name} takes a scalar pred as argument, got {pred}")
  for arg in tree_util.tree_leaves((fmt_args, fmt_kwargs)):
    if not isinstance(arg, (Array, np.ndarray)):
      raise TypeError("Formatting arguments to checkify.check need to be PyTrees of arrays, "
                      f"but got {arg!r} of type {type(arg)}.")
  new_error = FailedCheckError(_traceback_info(), msg, *fmt_args, **fmt_kwargs)
  error = assert_func(init_error, _jnp().logical_not(pred), new_error)
  _check_error(error, debug=debug)


def check(pred, msg, *fmt_args, debug=False, **fmt_kwargs):
  """Report an error with message ``msg`` (a format string; ``fmt_args``/``fmt_kwargs``
  are pytrees of arrays formatted into it) when the scalar boolean ``pred`` is False.

  Under ``checkify`` the failure becomes part of the returned ``Error``; eagerly outside
  it raises ``JaxRuntimeError``; staged (jit, scan, ...) without ``checkify`` it raises
  JAX's "not functionalized" ValueError (when the program runs, not when it is lowered).
  ``debug=True`` makes it a ``debug_check``."""
  _check(pred, msg, debug, *fmt_args, **fmt_kwargs)


def debug_check(pred, msg, *fmt_args, **fmt_kwargs):
  """Like ``check`` under ``checkify``; a no-op everywhere else."""
  _check(pred, msg, True, *fmt_args, **fmt_kwargs)


def check_error(error):
  """Raise if ``error`` (an ``Error``) holds a failure; functionalized by ``checkify``
  (the inverse of ``checkify``: it turns an error value back into a check)."""
  if not isinstance(error, Error):
    raise TypeError("check_error takes an Error as argument, got type "
                    f"{type(error)} instead.")
  _check_error(error, debug=False)


def checkify(f, errors=user_checks):
  """Functionalize the ``check``s in ``f`` and add the automatic checks in ``errors``
  (``user_checks`` by default; ``nan_checks``, ``index_checks``, ``div_checks``,
  ``float_checks``, ``automatic_checks``, ``all_checks`` or unions of them).

  Returns a function with ``f``'s arguments returning ``(error, out)``.  As in JAX the
  function is staged with its arguments closed over (Python scalars stay Python
  scalars), and the checks compose with ``jit``, ``vmap``, ``grad`` and control flow.
  Messages match JAX's; an error's ``traceback_info`` is a source-location string
  rather than a traceback."""
  from pyjax._src.interpreters import staging
  errors = frozenset(errors)

  @functools.wraps(f)
  def checked_fun(*args, **kwargs):
    box = []

    def flat():
      out = f(*args, **kwargs)
      leaves, tree = tree_util.tree_flatten(out)
      box.append(tree)
      return leaves

    dbg = staging.DebugInfo("checkify", staging.fun_source_info(f), [],
                            staging.fun_name(f))
    closed = core.trace_to_jaxpr(flat, [], dbg)
    error, outs = checkify_jaxpr_flat(closed.jaxpr, closed.consts, errors, init_error, [])
    outs = [_jnp().asarray(o) if isinstance(o, (np.ndarray, np.generic)) else o for o in outs]
    return error, tree_util.tree_unflatten(box[-1], outs)
  return checked_fun


# --- the error-threading interpreter ----------------------------------------------------
error_checks = {}   # primitive -> rule(error, enabled_errors, *args, **params) -> (error, out)


def checkify_jaxpr(closed, enabled_errors, error, *args):
  """Run a ClosedJaxpr threading ``error``: (error, outputs)."""
  return checkify_jaxpr_flat(closed.jaxpr, closed.consts, enabled_errors, error, args)


def checkify_jaxpr_flat(jaxpr, consts, enabled_errors, error, args):
  _init_rules()
  env = {}
  for v, c in zip(jaxpr.constvars, consts):
    env[v] = c
  for v, a in zip(jaxpr.invars, args):
    env[v] = a

  def read(v):
    return core.literal_value(v) if type(v) is core.Literal else env[v]

  state = core._state
  prev_src = state.source_info
  try:
    for eqn in jaxpr.eqns:
      ins = [read(v) for v in eqn.invars]
      state.source_info = eqn.source_info or prev_src
      rule = error_checks.get(eqn.primitive)
      if rule is None:
        out = eqn.primitive.bind(*ins, **eqn.params)
      else:
        error, out = rule(error, enabled_errors, *ins, **eqn.params)
      if eqn.primitive.multiple_results:
        for v, o in zip(eqn.outvars, out):
          env[v] = o
      else:
        env[eqn.outvars[0]] = out
  finally:
    state.source_info = prev_src
  return error, [read(v) for v in jaxpr.outvars]


# --- automatic checks -------------------------------------------------------------------
_NAN_PRIMITIVES = frozenset([
    "acos", "acosh", "add", "asin", "asinh", "atan2", "atan", "atanh", "bessel_i0e",
    "bessel_i1e", "cbrt", "conv_general_dilated", "cos", "cosh", "cumlogsumexp", "cummax",
    "cummin", "cumprod", "cumsum", "digamma", "dot_general", "erf_inv", "erf", "erfc", "exp",
    "expm1", "fft", "igamma_grad_a", "igamma", "igammac", "integer_pow", "lgamma",
    "custom_linear_solve", "log1p", "log", "logistic", "mul", "pad", "pow", "psum",
    "reduce", "reduce_prod", "reduce_sum", "reduce_window", "reduce_window_sum",
    "regularized_incomplete_beta", "rem", "rng_uniform", "rsqrt", "sin", "sinh", "sqrt",
    "sub", "tan", "tanh"])
_SCATTERS = frozenset(["scatter", "scatter-add", "scatter-mul", "scatter-min",
                       "scatter-max"])


def _any_nan(x):
  aval = core.get_aval(x)
  if not (dtypes.issubdtype(aval.dtype, np.inexact)):
    return None
  lax = _lax()
  return lax.reduce_or(lax.ne(x, x), tuple(range(len(aval.shape))))


def check_nans(prim, error, enabled_errors, out):
  if NaNError not in enabled_errors:
    return error
  outs = out if prim.multiple_results else [out]
  flags = [f for f in (_any_nan(o) for o in outs) if f is not None]
  if not flags:
    pred = False
  else:
    pred = flags[0]
    for f in flags[1:]:
      pred = _lax().bitwise_or(pred, f)
  return assert_func(error, pred, NaNError(_traceback_info(), prim.name))


def _nan_rule(prim, error, enabled_errors, *args, **params):
  out = prim.bind(*args, **params)
  return check_nans(prim, error, enabled_errors, out), out


def _div_rule(prim, error, enabled_errors, x, y):
  if DivisionByZeroError in enabled_errors:
    jnp = _jnp()
    error = assert_func(error, jnp.any(jnp.equal(y, 0)), DivisionByZeroError(_traceback_info()))
  return _nan_rule(prim, error, enabled_errors, x, y)


def _oob_payload(mask, indices, dims_map, operand_shape):
  """int32[3]: the first out-of-bounds index, its operand axis and that axis's size."""
  jnp = _jnp()
  flat = jnp.argmin(jnp.logical_not(mask).ravel())
  k = core.get_aval(indices).shape[-1] if core.get_aval(indices).shape else 1
  pos = flat % k
  axis = jnp.asarray(np.asarray(dims_map, np.int32))[pos]
  size = jnp.asarray(np.asarray(operand_shape, np.int32))[axis]
  index = jnp.ravel(indices)[flat]
  return jnp.stack([index.astype(np.int32), axis.astype(np.int32), size.astype(np.int32)])


def _dynamic_slice_rule(prim, error, enabled_errors, operand, *starts, slice_sizes, **params):
  out = prim.bind(operand, *starts, slice_sizes=slice_sizes, **params)
  if OOBError not in enabled_errors:
    return error, out
  jnp = _jnp()
  shape = core.get_aval(operand).shape
  starts_arr = jnp.stack([jnp.asarray(s) for s in starts]) if starts else jnp.zeros((0,), np.int32)
  dt = starts_arr.dtype
  mask = (starts_arr < 0) | (starts_arr + np.asarray(slice_sizes, dt) > np.asarray(shape, dt))
  payload = _oob_payload(mask, starts_arr, range(len(shape)), shape)
  error = assert_func(error, jnp.any(mask),
                      OOBError(_traceback_info(), "dynamic_slice", tuple(shape), payload))
  return error, out


def _dynamic_update_slice_rule(prim, error, enabled_errors, operand, update, *starts,
                               **params):
  out = prim.bind(operand, update, *starts, **params)
  if OOBError not in enabled_errors:
    return error, out
  jnp = _jnp()
  shape = core.get_aval(operand).shape
  ushape = core.get_aval(update).shape
  starts_arr = jnp.stack([jnp.asarray(s) for s in starts]) if starts else jnp.zeros((0,), np.int32)
  dt = starts_arr.dtype
  mask = (starts_arr < 0) | (starts_arr + np.asarray(ushape, dt) > np.asarray(shape, dt))
  payload = _oob_payload(mask, starts_arr, range(len(shape)), shape)
  error = assert_func(error, jnp.any(mask),
                      OOBError(_traceback_info(), "dynamic_update_slice", tuple(shape),
                               payload))
  return error, out


def _gather_rule(prim, error, enabled_errors, operand, indices, *, dimension_numbers,
                 slice_sizes, **params):
  out = prim.bind(operand, indices, dimension_numbers=dimension_numbers,
                  slice_sizes=slice_sizes, **params)
  if OOBError not in enabled_errors:
    return error, out
  jnp = _jnp()
  dn = dimension_numbers
  shape = np.asarray(core.get_aval(operand).shape, np.int64)
  smap = np.asarray(dn.start_index_map, np.int64)
  upper = shape[smap] - np.asarray(slice_sizes, np.int64)[smap]
  dt = core.get_aval(indices).dtype
  upper = np.minimum(upper, np.iinfo(dt).max).astype(dt)
  mask = (indices < 0) | (indices > upper)
  payload = _oob_payload(mask, indices, dn.start_index_map, tuple(core.get_aval(operand).shape))
  error = assert_func(error, jnp.any(mask),
                      OOBError(_traceback_info(), "gather", tuple(core.get_aval(operand).shape),
                               payload))
  return error, out


def _scatter_rule(prim, error, enabled_errors, operand, indices, updates, *,
                  dimension_numbers, **params):
  out = prim.bind(operand, indices, updates, dimension_numbers=dimension_numbers, **params)
  if OOBError not in enabled_errors:
    return error, out
  jnp = _jnp()
  dn = dimension_numbers
  oshape = tuple(core.get_aval(operand).shape)
  ushape = core.get_aval(updates).shape
  sizes, pos = [], 0
  for i in range(len(oshape)):
    if i in dn.inserted_window_dims or i in tuple(dn.operand_batching_dims):
      sizes.append(1)
    else:
      sizes.append(ushape[dn.update_window_dims[pos]])
      pos += 1
  dt = core.get_aval(indices).dtype
  upper = np.asarray([oshape[i] - sizes[i] for i in dn.scatter_dims_to_operand_dims],
                     np.int64)
  upper = np.minimum(upper, np.iinfo(dt).max).astype(dt)
  mask = (indices < 0) | (indices > upper)
  payload = _oob_payload(mask, indices, dn.scatter_dims_to_operand_dims, oshape)
  error = assert_func(error, jnp.any(mask), OOBError(_traceback_info(), prim.name, oshape,
                                                     payload))
  error = check_nans(prim, error, enabled_errors, out)
  return error, out


def _check_discharge_rule(error, enabled_errors, *args, err_tree, debug):
  del debug
  new_error = tree_util.tree_unflatten(err_tree, args)
  out = error
  for eff in new_error._pred:
    if eff.error_type in enabled_errors:
      out = update_error(out, new_error._pred[eff], new_error._code[eff], {},
                         new_error._payload[eff], eff)
  out = out._replace(_metadata={**new_error._metadata, **out._metadata})
  return out, []


_rules_ready = []


def _init_rules():
  """Fill ``error_checks`` from the primitives defined so far (by name: the lax modules
  register lazily)."""
  if _rules_ready:
    return
  import sys
  from pyjax._src.lax import lax_api  # noqa: F401  -- make sure the families are loaded
  from pyjax._src.lax.control_flow import conditionals, loops
  from pyjax._src.interpreters import staging
  from pyjax._src import ad_checkpoint, api_ad
  from pyjax._src import checkify_rules
  prims = {}
  for name, mod in list(sys.modules.items()):
    if mod is None or not name.startswith("pyjax._src.lax"):
      continue
    for v in list(vars(mod).values()):
      if isinstance(v, core.Primitive):
        prims.setdefault(v.name, v)
  for name in _NAN_PRIMITIVES:
    p = prims.get(name)
    if p is not None:
      error_checks.setdefault(p, functools.partial(_nan_rule, p))
  special = {"div": _div_rule, "dynamic_slice": _dynamic_slice_rule,
             "dynamic_update_slice": _dynamic_update_slice_rule, "gather": _gather_rule}
  for name, rule in special.items():
    p = prims.get(name)
    if p is not None:
      error_checks[p] = functools.partial(rule, p)
  for name in _SCATTERS:
    p = prims.get(name)
    if p is not None:
      error_checks[p] = functools.partial(_scatter_rule, p)
  error_checks[check_p] = _check_discharge_rule
  checkify_rules.register(error_checks, conditionals.cond_p, loops.while_p, loops.scan_p,
                          staging.jit_p, ad_checkpoint.remat_p, api_ad.custom_jvp_call_p,
                          api_ad.custom_vjp_call_p)
  _rules_ready.append(True)

