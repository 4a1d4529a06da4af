"""pyjax: JAX's programming model in Python.  ``import pyjax as jax``."""
from pyjax._src.config import config  # noqa: F401
from pyjax._src import dtypes as _dtypes  # noqa: F401
from pyjax._src.backends.cpu import backend as _cpu_backend  # noqa: F401  (registers "cpu")
from pyjax._src.runtime.array import Array  # noqa: F401
from pyjax._src.runtime.devices import (  # noqa: F401
    devices, local_devices, device_count, local_device_count, process_index,
    process_count, default_backend)
from pyjax._src.runtime.devices import default_device_ctx as default_device  # noqa: F401
from pyjax._src import core as _core  # noqa: F401
from pyjax._src.api_device import (  # noqa: F401
    device_put, device_get, block_until_ready, device_put_replicated, effects_barrier)
from pyjax._src.runtime.devices import Device  # noqa: F401
from pyjax._src.api import (  # noqa: F401
    jit, make_jaxpr, eval_shape, ShapeDtypeStruct, disable_jit, ensure_compile_time_eval, typeof)
from pyjax._src.api_ad import (  # noqa: F401
    jvp, linearize, vjp, grad, value_and_grad, jacfwd, jacrev, jacobian, hessian,
    custom_jvp, custom_vjp)
from pyjax._src.api_vmap import vmap  # noqa: F401
from pyjax._src.api import (  # noqa: F401
    named_call, named_scope, log_compiles, explain_cache_misses)
from pyjax._src.api_ad import closure_convert, custom_gradient  # noqa: F401
from pyjax._src.ad_checkpoint import checkpoint, remat, checkpoint_policies  # noqa: F401
from pyjax._src.callback import pure_callback  # noqa: F401
from pyjax import debug, custom_derivatives, stages  # noqa: F401
from pyjax import dtypes, errors  # noqa: F401
from pyjax import numpy, lax  # noqa: F401
from pyjax import tree_util, tree  # noqa: F401
from pyjax import random  # noqa: F401
from pyjax import nn, scipy  # noqa: F401

from pyjax._src.jax_alias import install_as_jax  # noqa: F401
from pyjax import profiler  # noqa: F401
from pyjax import ffi  # noqa: F401
from pyjax import export  # noqa: F401
from pyjax import typing, flatten_util, ops, dlpack, lib, monitoring, test_util  # noqa: F401
from pyjax import image  # noqa: F401
from pyjax import version  # noqa: F401
from pyjax.version import __version_info__  # noqa: F401
from pyjax._src.config import (  # noqa: F401
    enable_checks, enable_x64, debug_key_reuse, check_tracer_leaks, checking_leaks,
    enable_custom_prng, softmax_custom_jvp, debug_nans, debug_infs, log_compiles, no_tracing,
    no_execution, explain_cache_misses, default_matmul_precision, default_prng_impl,
    numpy_dtype_promotion, numpy_rank_promotion, allow_f16_reductions,
    jax2tf_associative_scan_reductions, legacy_prng_key, threefry_partitionable,
    array_garbage_collection_guard, transfer_guard, transfer_guard_host_to_device,
    transfer_guard_device_to_device, transfer_guard_device_to_host,
    remove_size_one_mesh_axis_from_type, thread_guard, auto_pcast)
from pyjax._src.api_transpose import linear_transpose, fwd_and_bwd  # noqa: F401
from pyjax._src.dtypes import float0  # noqa: F401
from pyjax import custom_batching  # noqa: F401
from pyjax import core, interpreters, api_util, sharding  # noqa: F401
from pyjax._src.pmap import pmap  # noqa: F401
from pyjax._src.sharding import make_mesh, set_mesh  # noqa: F401
from pyjax._src.sharding import NamedSharding, PartitionSpec as P  # noqa: F401
from pyjax._src.environment import live_arrays, clear_caches, print_environment_info  # noqa: F401
from pyjax._src.state.types import Ref  # noqa: F401
from pyjax._src.state.primitives import new_ref, empty_ref, free_ref, freeze  # noqa: F401
from pyjax import ref  # noqa: F401
from pyjax._src.array_construction import (  # noqa: F401
    make_array_from_callback, make_array_from_single_device_arrays,
    make_array_from_process_local_data)
from pyjax._src.runtime.array import Shard  # noqa: F401
from pyjax import distributed  # noqa: F401
from pyjax._src.shard_map import shard_map  # noqa: F401
from pyjax._src.jit_sharding import reshard  # noqa: F401
from pyjax._src.backends.gpu import platform as _gpu_platform  # noqa: F401  (registers "gpu")

__version__ = "0.1.0"
