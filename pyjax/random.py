"""pyjax.random (as jax.random): typed PRNG keys and samplers with JAX's threefry2x32 bits.

Implementations live in ``pyjax._src.random``; see docs/architecture.md ("Random") for
how typed keys are represented and how that differs from JAX.
"""
from pyjax._src.random.keys import (  # noqa: F401
    key, PRNGKey, split, fold_in, clone, key_data, wrap_key_data, key_impl, key_dtype)
from pyjax._src.random.samplers import (  # noqa: F401
    bits, uniform, randint, permutation, choice, normal, truncated_normal, bernoulli,
    rademacher, categorical, gumbel, exponential, laplace, logistic, cauchy, pareto,
    rayleigh, wald, geometric, triangular, lognormal, weibull_min, maxwell,
    double_sided_maxwell, multivariate_normal, orthogonal)
from pyjax._src.random.gamma import (  # noqa: F401
    gamma, loggamma, beta, dirichlet, t, chisquare, f, generalized_normal, ball,
    random_gamma_p)
from pyjax._src.random.discrete import poisson, binomial, multinomial  # noqa: F401

__all__ = [
    "PRNGKey", "ball", "bernoulli", "beta", "binomial", "bits", "categorical", "cauchy",
    "chisquare", "choice", "clone", "dirichlet", "double_sided_maxwell", "exponential", "f",
    "fold_in", "gamma", "generalized_normal", "geometric", "gumbel", "key", "key_data",
    "key_dtype", "key_impl", "laplace", "loggamma", "logistic", "lognormal", "maxwell",
    "multinomial", "multivariate_normal", "normal", "orthogonal", "pareto", "permutation",
    "poisson", "rademacher", "randint", "random_gamma_p", "rayleigh", "split", "t",
    "triangular", "truncated_normal", "uniform", "wald", "weibull_min", "wrap_key_data"]
