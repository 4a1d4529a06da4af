"""pyjax.nn: neural-network functions (thin re-exports of pyjax._src.nn)."""
from pyjax._src.nn.functions import (  # noqa: F401
    celu, dot_product_attention, elu, gelu, get_scaled_dot_general_config, glu, hard_sigmoid,
    hard_silu, hard_swish, hard_tanh, identity, leaky_relu, log1mexp, log_sigmoid,
    log_softmax, logmeanexp, logsumexp, mish, one_hot, relu, relu6, scaled_dot_general,
    scaled_matmul, selu, sigmoid, silu, soft_sign, softmax, softplus, sparse_plus,
    sparse_sigmoid, squareplus, standardize, swish, tanh)
from pyjax.nn import initializers  # noqa: F401
