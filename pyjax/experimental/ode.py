"""pyjax.experimental.ode (as jax.experimental.ode): adaptive ODE integration."""
from pyjax._src.ode import odeint  # noqa: F401
