"""Eager implementations of the token primitives (``lax/tokens.py``): ``create_token`` and
``after_all``.
"""
from __future__ import annotations

import numpy as np

from pyjax._src.backends.cpu.eager.registry import register


# --- tokens, composite, platform_index ---------------------------------------------------
@register("create_token")
def _create_token():
  return np.zeros((), np.bool_)


@register("after_all")
def _after_all(*tokens):
  return np.zeros((), np.bool_)
