"""Tokens: ``create_token`` / ``after_all`` (and the token type ``psend``/``precv`` use).

A token orders side-effecting operations in XLA; it carries no data.  Its abstract value
prints as ``Tok`` in jaxprs, as JAX's.  Eagerly the functions return a ``Token`` object.
Differs from JAX: a token returned from a ``jit`` function comes back as an Array of the
token type (a 0-d boolean buffer), not a ``Token``.
"""
from __future__ import annotations

import numpy as np

from pyjax._src import core
from pyjax._src.avals import ShapedArray
from pyjax._src.interpreters import batching

__all__ = ["create_token", "create_token_p", "after_all", "after_all_p"]


class AbstractToken(ShapedArray):
  """The abstract value of a token (``Tok``)."""
  __slots__ = ()

  def __init__(self):
    super().__init__((), np.dtype(np.bool_), False)

  def update(self, shape=None, dtype=None, weak_type=None):
    return self

  def str_short(self, short_dtypes=False):
    return "Tok"

  def __repr__(self):
    return "AbstractToken()"

  __str__ = __repr__

  def __eq__(self, other):
    return type(other) is AbstractToken

  def __hash__(self):
    return hash(AbstractToken)


abstract_token = AbstractToken()


class Token:
  """A runtime token: orders effects, holds no data."""
  __slots__ = ()
  aval = abstract_token

  def block_until_ready(self):
    return self

  def __jax_array__(self):
    from pyjax._src.runtime.array import ArrayImpl
    return ArrayImpl(np.zeros((), np.bool_), abstract_token)

  def __repr__(self):
    return "Token()"


def is_token(x):
  """Whether ``x`` (a value or tracer) is a token."""
  return type(core.get_aval(x)) is AbstractToken


create_token_p = core.Primitive("create_token")
create_token_p.def_abstract_eval(lambda *_: abstract_token)
create_token_p.def_impl(lambda *_: Token())


def create_token(_=None):
  """A token with no preconditions for sequencing effects (the argument is ignored, as
  in JAX)."""
  return create_token_p.bind()


after_all_p = core.Primitive("after_all")


@after_all_p.def_abstract_eval
def _after_all_abstract(*avals):
  if any(type(a) is not AbstractToken for a in avals):
    raise TypeError("Arguments to after_all must be tokens")
  return abstract_token


@after_all_p.def_impl
def _after_all_impl(*tokens):
  _after_all_abstract(*[core.get_aval(t) for t in tokens])
  return Token()


def after_all(*operands):
  """A token that comes after all the given tokens."""
  return after_all_p.bind(*operands)


batching.primitive_batchers[create_token_p] = (   # no operands: the same for every example
    lambda args, dims: (create_token_p.bind(), batching.not_mapped))
# Tokens are never batched (vmap cannot map over a token): a token is the same for every
# example, so the result is unbatched.
batching.primitive_batchers[after_all_p] = (
    lambda args, dims: (after_all_p.bind(*args), batching.not_mapped))
