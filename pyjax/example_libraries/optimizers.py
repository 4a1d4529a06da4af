"""pyjax.example_libraries.optimizers (as jax.example_libraries.optimizers): optimizer
triples on pytrees, step-size schedules, and state (un)packing."""
from pyjax._src.example_libraries.optimizers import (  # noqa: F401
    Array, InitFn, JoinPoint, Optimizer, OptimizerState, Params, ParamsFn, Schedule, State,
    Step, UpdateFn, Updates, adagrad, adam, adamax, clip_grads, constant, exponential_decay,
    inverse_time_decay, l2_norm, make_schedule, momentum, nesterov, optimizer,
    pack_optimizer_state, piecewise_constant, polynomial_decay, rmsprop, rmsprop_momentum,
    sgd, sm3, unpack_optimizer_state)
