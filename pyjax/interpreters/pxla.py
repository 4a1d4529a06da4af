"""``jax.interpreters.pxla`` (single process; see ``pyjax._src.pxla``)."""
from pyjax._src.pxla import (  # noqa: F401
    ResultsHandler, global_avals_to_results_handler, mesh_global_to_local,
    mesh_local_to_global)
