"""pyjax.experimental.jet (as jax.experimental.jet): Taylor-mode differentiation."""
from pyjax._src.jet import jet, jet2, jet_rules, zero_series  # noqa: F401
