"""pyjax.errors (as jax.errors)."""
from pyjax._src.errors import (  # noqa: F401
    ConcretizationTypeError, NonConcreteBooleanIndexError, TracerArrayConversionError,
    TracerBoolConversionError, TracerIntegerConversionError, UnexpectedTracerError,
    KeyReuseError, JaxRuntimeError, JAXTypeError, JAXIndexError, JaxprTypeError,
    InconclusiveDimensionOperation)
