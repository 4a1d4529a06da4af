"""``jax.extend.core.primitives``: pyjax's own primitive objects under JAX's names.

Differences from JAX: the names of primitives pyjax does not have (``call_p``,
``closed_call_p``, the ``random_*`` key primitives -- pyjax's typed keys are pytrees over
``threefry2x32`` -- and the state primitives ``get_p``/``swap_p``) are absent.
"""
from pyjax._src.lax.elementwise import (  # noqa: F401
    abs_p, acos_p, acosh_p, add_p, and_p, asin_p, asinh_p, atan2_p, atan_p, atanh_p,
    bessel_i0e_p, bessel_i1e_p, bitcast_convert_type_p, cbrt_p, ceil_p, clamp_p, clz_p,
    complex_p, conj_p, convert_element_type_p, cos_p, cosh_p, digamma_p, div_p, eq_p,
    erf_inv_p, erf_p, erfc_p, exp2_p, exp_p, expm1_p, floor_p, ge_p, gt_p,
    igamma_grad_a_p, igamma_p, igammac_p, imag_p, integer_pow_p, is_finite_p, le_p,
    lgamma_p, log1p_p, log_p, logistic_p, lt_p, max_p, min_p, mul_p, ne_p, neg_p,
    nextafter_p, not_p, or_p, polygamma_p, population_count_p, pow_p, real_p,
    reduce_precision_p, regularized_incomplete_beta_p, rem_p, round_p, rsqrt_p,
    select_n_p, shift_left_p, shift_right_arithmetic_p, shift_right_logical_p, sign_p,
    sin_p, sinh_p, sqrt_p, square_p, sub_p, tan_p, tanh_p, xor_p, zeta_p)
from pyjax._src.lax.shapes import (  # noqa: F401
    broadcast_in_dim_p, concatenate_p, dynamic_slice_p, dynamic_update_slice_p, iota_p,
    pad_p, reshape_p, rev_p, slice_p, squeeze_p, transpose_p)
from pyjax._src.lax.gather_scatter import (  # noqa: F401
    gather_p, scatter_add_p, scatter_max_p, scatter_min_p, scatter_mul_p, scatter_p)
from pyjax._src.lax.reductions import (  # noqa: F401
    argmax_p, argmin_p, cumlogsumexp_p, cummax_p, cummin_p, cumprod_p, cumsum_p,
    reduce_and_p, reduce_max_p, reduce_min_p, reduce_or_p, reduce_p, reduce_prod_p,
    reduce_sum_p, reduce_xor_p)
from pyjax._src.lax.dot import (  # noqa: F401
    dot_general_p)
from pyjax._src.lax.convolution import (  # noqa: F401
    conv_general_dilated_p)
from pyjax._src.lax.fft import (  # noqa: F401
    fft_p)
from pyjax._src.lax.linalg import (  # noqa: F401
    cholesky_p, eig_p, eigh_p, hessenberg_p, householder_product_p, lu_p, qr_p, schur_p,
    svd_p, triangular_solve_p, tridiagonal_p, tridiagonal_solve_p)
from pyjax._src.lax.sorting import (  # noqa: F401
    sort_p, top_k_p)
from pyjax._src.lax.windowed import (  # noqa: F401
    reduce_window_max_p, reduce_window_min_p, reduce_window_p, reduce_window_sum_p,
    select_and_gather_add_p, select_and_scatter_add_p)
from pyjax._src.lax.buffers import (  # noqa: F401
    copy_p)
from pyjax._src.lax.elementwise import (  # noqa: F401
    eq_to_p, le_to_p, lt_to_p)
from pyjax._src.lax.ann import (  # noqa: F401
    approx_top_k_p)
from pyjax._src.lax.parallel import (  # noqa: F401
    all_gather_p, all_to_all_p, axis_index_p, pmax_p, pmin_p, ppermute_p, psum_p)
from pyjax._src.lax.control_flow.conditionals import (  # noqa: F401
    cond_p)
from pyjax._src.lax.control_flow.loops import (  # noqa: F401
    scan_p, while_p)
from pyjax._src.lax.rng import (  # noqa: F401
    rng_bit_generator_p, rng_uniform_p)
from pyjax._src.lax.tokens import (  # noqa: F401
    after_all_p, create_token_p)
from pyjax._src.lax.sharding import (  # noqa: F401
    device_put_p, sharding_constraint_p)
from pyjax._src.lax.select_and_scatter import (  # noqa: F401
    select_and_scatter_p)
from pyjax._src.lax.solvers import (  # noqa: F401
    linear_solve_p)
from pyjax._src.lax.parallel import (  # noqa: F401
    ragged_all_to_all_p)
from pyjax._src.interpreters.ad import (  # noqa: F401
    stop_gradient_p)
from pyjax._src.interpreters.staging import (  # noqa: F401
    jit_p)
from pyjax._src.ad_checkpoint import (  # noqa: F401
    name_p, remat_p)
from pyjax._src.api_ad import (  # noqa: F401
    custom_jvp_call_p, custom_lin_p, custom_vjp_call_p)
from pyjax._src.random.prng import (  # noqa: F401
    threefry2x32_p)
from pyjax._src.random.gamma import (  # noqa: F401
    random_gamma_p)
from pyjax._src.interpreters.ad import add_any_p as add_jaxvals_p  # noqa: F401
