"""Pallas for pyjax: kernels over a grid of blocks (``jax.experimental.pallas``)."""
