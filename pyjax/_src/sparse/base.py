"""``JAXSparse``: the base class of every sparse array type (``jax.experimental.sparse``).

Differs from JAX: pyjax's ``BCOO`` and ``BCSR`` are registered as virtual subclasses
(``isinstance`` and ``issubclass`` hold) rather than inheriting from it; ``COO``, ``CSR``
and ``CSC`` inherit from it.
"""
from __future__ import annotations

import abc
import math
import operator

from pyjax._src import core

__all__ = ["JAXSparse"]


class JAXSparse(abc.ABC):
  """Base class for sparse array types: subclasses hold their buffers (``data`` and
  index arrays) and a static ``shape``, and define ``todense``, ``tree_flatten``,
  ``tree_unflatten`` and ``transpose``."""
  __hash__ = None
  __array_priority__ = 2000

  def __init__(self, args, *, shape):
    self.shape = tuple(operator.index(s) for s in shape)

  @property
  def nse(self):
    """The number of stored elements (``data.size`` for the 2-D formats)."""
    return self.data.size

  @property
  def dtype(self):
    return self.data.dtype

  @property
  def size(self):
    return math.prod(self.shape)

  @property
  def ndim(self):
    return len(self.shape)

  def __len__(self):
    return self.shape[0]

  @property
  def T(self):
    return self.transpose()

  def __repr__(self):
    name = type(self).__name__
    try:
      r = f"{name}({self.dtype}{list(self.shape)}, nse={self.nse})"
    except Exception:  # noqa: BLE001 - repr of a broken object
      r = f"{name}(<invalid>)"
    if isinstance(getattr(self, "data", None), core.Tracer):
      r = f"{type(self.data).__name__}[{r}]"
    return r

  def block_until_ready(self):
    for leaf in self.tree_flatten()[0]:
      leaf.block_until_ready()
    return self

  @abc.abstractmethod
  def tree_flatten(self):
    """(children, aux_data) of the pytree."""

  @classmethod
  @abc.abstractmethod
  def tree_unflatten(cls, aux_data, children):
    """The inverse of ``tree_flatten``."""

  @abc.abstractmethod
  def todense(self):
    """The dense array this sparse array represents."""

  @abc.abstractmethod
  def transpose(self, axes=None):
    """The transposed sparse array."""
