"""JAX's ``ad_util`` names over pyjax's AD (``interpreters/ad.py``): ``stop_gradient_p``,
``add_jaxvals_p`` (pyjax's ``add_any``), symbolic ``Zero`` and zero helpers."""
from __future__ import annotations

from pyjax._src.interpreters.ad import (  # noqa: F401
    Zero, add_any_p as add_jaxvals_p, add_jaxvals, instantiate_zeros as instantiate,
    stop_gradient_p, zeros_like, zeros_like_aval)

zeros_like_jaxval = zeros_like
