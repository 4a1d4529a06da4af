"""``jax.experimental.layout``: memory layout descriptions (pyjax arrays are row-major)."""
from pyjax._src.layout import Format, Layout, with_layout_constraint  # noqa: F401
