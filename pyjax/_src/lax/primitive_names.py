"""JAX's ``lax.*_p`` names for the primitives declared in the family modules (``jax.lax``
exports its primitive objects; user code binds them or matches on them in jaxprs)."""
from pyjax._src.interpreters.ad import stop_gradient_p
from pyjax._src.lax.control_flow.conditionals import cond_p
from pyjax._src.lax.control_flow.loops import scan_p, while_p
from pyjax._src.lax.elementwise import (
    abs_p, acos_p, acosh_p, add_p, and_p, asin_p, asinh_p, atan2_p, atan_p, atanh_p,
    bessel_i0e_p, bessel_i1e_p, bitcast_convert_type_p, cbrt_p, ceil_p, clamp_p, clz_p,
    complex_p, conj_p, convert_element_type_p, cos_p, cosh_p, digamma_p, div_p, eq_p,
    erf_inv_p, erf_p, erfc_p, exp2_p, exp_p, expm1_p, floor_p, ge_p, gt_p, igamma_grad_a_p,
    igamma_p, igammac_p, imag_p, integer_pow_p, is_finite_p, le_p, lgamma_p, log1p_p, log_p,
    logistic_p, lt_p, max_p, min_p, mul_p, ne_p, neg_p, nextafter_p, not_p, or_p,
    polygamma_p, population_count_p, pow_p, real_p, reduce_precision_p,
    regularized_incomplete_beta_p, rem_p, round_p, rsqrt_p, select_n_p, shift_left_p,
    shift_right_arithmetic_p, shift_right_logical_p, sign_p, sin_p, sinh_p, sqrt_p,
    square_p, sub_p, tan_p, tanh_p, xor_p, zeta_p)
from pyjax._src.lax.shapes import (
    broadcast_in_dim_p, concatenate_p, dynamic_slice_p, dynamic_update_slice_p, iota_p,
    pad_p, reshape_p, rev_p, slice_p, squeeze_p, transpose_p)

__all__ = [n for n in dir() if n.endswith("_p")]
