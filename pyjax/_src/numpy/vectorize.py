"""jnp.vectorize (NumPy's vectorize, implemented with vmap, with generalized-ufunc
``signature`` support), jnp.piecewise, jnp.apply_along_axis and jnp.apply_over_axes."""
from __future__ import annotations

import functools
import re
import warnings

import numpy as np

from pyjax._src import dtypes
from pyjax._src.config import config
from pyjax._src.lax import lax_api as lax
from pyjax._src.numpy import manipulation as _manip
from pyjax._src.numpy import reductions as _red
from pyjax._src.numpy.array_constructors import array as _array, asarray as _asarray
from pyjax._src.numpy.util import canonicalize_axis, check_arraylike

__all__ = ["vectorize", "piecewise", "apply_along_axis", "apply_over_axes"]

_DIMENSION_NAME = r"\w+"
_CORE_DIMENSION_LIST = f"(?:{_DIMENSION_NAME}(?:,{_DIMENSION_NAME})*)?"
_ARGUMENT = rf"\({_CORE_DIMENSION_LIST}\)"
_ARGUMENT_LIST = f"{_ARGUMENT}(?:,{_ARGUMENT})*"
_SIGNATURE = f"^{_ARGUMENT_LIST}->{_ARGUMENT_LIST}$"


def _vmap(f, in_axes=0, out_axes=0):
  from pyjax._src.api_vmap import vmap
  return vmap(f, in_axes=in_axes, out_axes=out_axes)


def _parse_gufunc_signature(signature):
  """'(m,n),(n)->(m)' -> ([('m','n'), ('n',)], [('m',)])."""
  signature = re.sub(r"\s+", "", signature)
  if not re.match(_SIGNATURE, signature):
    raise ValueError(f"not a valid gufunc signature: {signature}")
  args, retvals = signature.split("->")

  def parse(s):
    return [tuple(re.findall(_DIMENSION_NAME, arg)) for arg in re.findall(_ARGUMENT, s)]
  return parse(args), parse(retvals)


def _update_dim_sizes(dim_sizes, shape, core_dims, error_context="", *, is_input):
  num_core = len(core_dims)
  if is_input:
    if len(shape) < num_core:
      raise ValueError(f"input with shape {shape!r} does not have enough dimensions for all "
                       f"core dimensions {core_dims!r} {error_context}")
  else:
    if len(shape) != num_core:
      raise ValueError(f"output shape {shape!r} does not match core dimensions {core_dims!r} "
                       f"{error_context}")
  core_shape = shape[len(shape) - num_core:] if num_core else ()
  for dim, size in zip(core_dims, core_shape):
    if dim not in dim_sizes:
      dim_sizes[dim] = size
    elif size != dim_sizes[dim]:
      raise ValueError(f"inconsistent size for core dimension {dim!r}: {size} vs "
                       f"{dim_sizes[dim]} {error_context}")


def _parse_input_dimensions(args, input_core_dims, error_context=""):
  if len(args) != len(input_core_dims):
    raise TypeError(f"wrong number of positional arguments: expected {len(input_core_dims)}, "
                    f"got {len(args)} {error_context}")
  shapes = []
  dim_sizes = {}
  for arg, core_dims in zip(args, input_core_dims):
    _update_dim_sizes(dim_sizes, arg.shape, core_dims, error_context, is_input=True)
    ndim = arg.ndim - len(core_dims)
    shapes.append(arg.shape[:ndim])
  return _red._broadcast_shapes_or_error(*shapes), dim_sizes


def _check_output_dims(func, dim_sizes, expected_output_core_dims, error_context=""):
  def wrapped(*args):
    out = func(*args)
    out_shapes = [np.shape(o) for o in out] if isinstance(out, tuple) else [np.shape(out)]
    if expected_output_core_dims is None:
      output_core_dims = [()] * len(out_shapes)
    else:
      output_core_dims = expected_output_core_dims
      if len(output_core_dims) > 1 and not isinstance(out, tuple):
        raise TypeError(f"output must be a tuple when multiple outputs are expected, got: "
                        f"{out!r}\n{error_context}")
      if len(out_shapes) != len(output_core_dims):
        raise TypeError(f"wrong number of output arguments: expected "
                        f"{len(output_core_dims)}, got {len(out_shapes)} {error_context}")
    sizes = dict(dim_sizes)
    for shape, core_dims in zip(out_shapes, output_core_dims):
      _update_dim_sizes(sizes, shape, core_dims, error_context, is_input=False)
    return out
  return wrapped


def _apply_excluded(func, excluded, args, kwargs):
  """Bind the excluded positional/keyword arguments into ``func``."""
  if not excluded:
    return func, args, kwargs
  dynamic_args = [a for i, a in enumerate(args) if i not in excluded]
  dynamic_kwargs = {k: v for k, v in kwargs.items() if k not in excluded}
  static_args = [(i, a) for i, a in enumerate(args) if i in excluded]
  static_kwargs = {k: v for k, v in kwargs.items() if k in excluded}

  def new_func(*args, **kwargs):
    args = list(args)
    for i, a in static_args:
      args.insert(i, a)
    return func(*args, **kwargs, **static_kwargs)
  return new_func, dynamic_args, dynamic_kwargs


def vectorize(pyfunc, *, excluded=frozenset(), signature=None):
  """Vectorize ``pyfunc`` over leading dimensions with vmap, broadcasting the arguments
  like NumPy (size-1 dimensions are not vmapped); ``signature`` (e.g. '(n),(n)->()')
  names core dimensions passed whole; ``excluded`` positions/keywords are passed
  unchanged.  Unlike np.vectorize it is not a Python loop: ``pyfunc`` must be traceable."""
  if any(not isinstance(e, (str, int)) for e in excluded):
    raise TypeError("jax.numpy.vectorize can only exclude integer or string arguments, but "
                    f"excluded={excluded!r}")
  if any(isinstance(e, int) and e < 0 for e in excluded):
    raise ValueError(f"excluded={excluded!r} contains negative numbers")

  @functools.wraps(pyfunc)
  def wrapped(*args, **kwargs):
    error_context = (f"on vectorized function with excluded={excluded!r} and "
                     f"signature={signature!r}")
    excluded_func, args, kwargs = _apply_excluded(pyfunc, excluded, args, kwargs)
    if signature is not None:
      input_core_dims, output_core_dims = _parse_gufunc_signature(signature)
    else:
      input_core_dims = [()] * len(args)
      output_core_dims = None
    none_args = {i for i, a in enumerate(args) if a is None}
    if none_args:
      if any(input_core_dims[i] != () for i in none_args):
        raise ValueError(f"Cannot pass None at locations {none_args} with "
                         f"signature={signature!r}")
      excluded_func, args, _ = _apply_excluded(excluded_func, none_args, args, {})
      input_core_dims = [d for i, d in enumerate(input_core_dims) if i not in none_args]
    args = tuple(_asarray(a) for a in args)
    broadcast_shape, dim_sizes = _parse_input_dimensions(args, input_core_dims, error_context)
    checked = _check_output_dims(functools.partial(excluded_func, **kwargs) if kwargs
                                 else excluded_func, dim_sizes, output_core_dims,
                                 error_context)
    mode = config.jax_numpy_rank_promotion
    if mode != "allow":
      ranks = [a.ndim - len(cd) for a, cd in zip(args, input_core_dims) if a.ndim != 0]
      if len(set(ranks)) > 1:
        msg = (f"operands with shapes {[a.shape for a in args]} require rank promotion for "
               f"jnp.vectorize function with signature {signature}. Set the "
               "jax_numpy_rank_promotion config option to 'allow' to disable this message; "
               "for more information, see "
               "https://docs.jax.dev/en/latest/rank_promotion_warning.html.")
        if mode == "warn":
          warnings.warn(msg)
        else:
          raise ValueError(msg)
    squeezed, rev_shapes = [], []
    for a, cd in zip(args, input_core_dims):
      noncore = a.shape[:a.ndim - len(cd)]
      filled = (len(broadcast_shape) - len(noncore)) * (1,) + noncore
      sq = tuple(i for i, s in enumerate(noncore) if s == 1)
      squeezed.append(lax.squeeze(a, sq) if sq else a)
      rev_shapes.append(filled[::-1])
    func = checked
    expand = []
    for negdim, sizes in enumerate(zip(*rev_shapes)):
      in_axes = tuple(None if s == 1 else 0 for s in sizes)
      if all(ax is None for ax in in_axes):
        expand.append(len(broadcast_shape) - 1 - negdim)
      else:
        func = _vmap(func, in_axes)
    result = func(*squeezed)
    if not expand:
      return result
    if isinstance(result, tuple):
      return tuple(_manip.expand_dims(r, tuple(expand)) for r in result)
    return _manip.expand_dims(result, tuple(expand))
  return wrapped


def piecewise(x, condlist, funclist, *args, **kw):
  """Evaluate the piece of ``funclist`` (functions or constants) selected by the first
  true condition; with one extra function it is the default.  Every function is
  evaluated on all of ``x`` and the results selected (as JAX's vmapped switch does)."""
  x = _red._asarray("piecewise", x) if check_arraylike("piecewise", x) is None else x
  nc, nf = len(condlist), len(funclist)
  if nf == nc + 1:
    funclist = list(funclist[-1:]) + list(funclist[:-1])
  elif nf == nc:
    funclist = [0] + list(funclist)
  else:
    raise ValueError(f"with {nc} condition(s), either {nc} or {nc + 1} functions are "
                     f"expected; got {nf}")
  conds = _asarray(condlist, dtype=dtypes.bool_)
  zeros = lax.full((1,) + conds.shape[1:], False, dtypes.bool_)
  cum = _red.cumsum(_manip.concatenate([zeros, conds], 0), 0)
  which = _red.argmax(cum, 0)
  dtype = x.dtype
  out = None
  for i, f in enumerate(funclist):
    if callable(f):
      val = lax.convert_element_type(_asarray(f(x, *args, **kw)), dtype)
    else:
      val = _array(f, dtype=dtype)
    val = _red._broadcast_to(val, which.shape)
    out = val if out is None else _red._where(lax.eq(which, np.array(i, which.dtype)), val, out)
  return out


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
  """Apply ``func1d`` to 1-D slices along ``axis`` (vmapped over the other axes)."""
  check_arraylike("apply_along_axis", arr)
  nd = np.ndim(arr)
  axis = canonicalize_axis(axis, nd)
  func = lambda a: func1d(a, *args, **kwargs)  # noqa: E731
  for i in range(1, nd - axis):
    func = _vmap(func, in_axes=i, out_axes=-1)
  for _ in range(axis):
    func = _vmap(func, in_axes=0, out_axes=0)
  return func(_asarray(arr))


def apply_over_axes(func, a, axes):
  """Apply ``func(a, axis)`` for each axis in turn, keeping the rank (the result of a
  reducing ``func`` gets its axis back)."""
  a = _red._asarray("apply_over_axes", a) if check_arraylike("apply_over_axes", a) is None \
      else a
  for axis in axes:
    b = func(a, axis)
    if b.ndim == a.ndim:
      a = b
    elif b.ndim == a.ndim - 1:
      a = _manip.expand_dims(b, axis)
    else:
      raise ValueError("function is not returning an array of the correct shape")
  return a
