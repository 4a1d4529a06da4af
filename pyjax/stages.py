"""pyjax.stages (as jax.stages): the objects of jit's trace -> lower -> compile pipeline."""
from pyjax._src.api_aot import Traced, Lowered, Compiled, ArgInfo  # noqa: F401
