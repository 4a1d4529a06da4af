"""pyjax.ad_checkpoint (as jax.ad_checkpoint): rematerialization."""
from pyjax._src.ad_checkpoint import (  # noqa: F401
    checkpoint, checkpoint_name, checkpoint_policies, print_saved_residuals, Saveable,
    Recompute, Offloadable)
