"""``jax.lax``'s public names, each imported from the family module that defines it.

``pyjax.lax`` re-exports ``__all__``; library code (jax.numpy, jax.scipy) imports this
module as ``from pyjax._src.lax import lax_api as lax`` to call lax functions by their JAX
names.  A new public lax function is added here, under its family.
"""
from pyjax._src.lax.elementwise import (  # noqa: F401
    AccuracyMode, RoundingMethod, Tolerance, _convert_element_type, abs, abs_p, acos,
    acos_p, acosh, acosh_p, add, add_p, and_p, asin, asin_p, asinh, asinh_p, atan,
    atan2, atan2_p, atan_p, atanh, atanh_p, bessel_i0e, bessel_i0e_p, bessel_i1e,
    bessel_i1e_p, betainc, bitcast_convert_type, bitcast_convert_type_p, bitwise_and,
    bitwise_not, bitwise_or, bitwise_xor, cbrt, cbrt_p, ceil, ceil_p, clamp, clamp_p,
    clz, clz_p, complex, complex_p, conj, conj_p, convert_element_type,
    convert_element_type_p, cos, cos_p, cosh, cosh_p, digamma, digamma_p, div, div_p,
    dtype, eq, eq_p, eq_to_p, erf, erf_inv, erf_inv_p, erf_p, erfc, erfc_p, exp, exp2,
    exp2_p, exp_p, expm1, expm1_p, floor, floor_p, ge, ge_p, gt, gt_p, igamma,
    igamma_grad_a, igamma_grad_a_p, igamma_p, igammac, igammac_p, imag, imag_p,
    integer_pow, integer_pow_p, is_finite, is_finite_p, le, le_p, le_to_p, lgamma,
    lgamma_p, log, log1p, log1p_p, log_p, logistic, logistic_p, lt, lt_p, lt_to_p, max,
    max_p, min, min_p, mul, mul_p, mulhi, mulhi_p, ne, ne_p, neg, neg_p, nextafter,
    nextafter_p, not_p, or_p, polygamma, polygamma_p, population_count,
    population_count_p, pow, pow_p, random_gamma_grad, real, real_p, reciprocal,
    reduce_precision, reduce_precision_p, regularized_incomplete_beta,
    regularized_incomplete_beta_p, rem, rem_p, round, round_p, rsqrt, rsqrt_p, select,
    select_n, select_n_p, shift_left, shift_left_p, shift_right_arithmetic,
    shift_right_arithmetic_p, shift_right_logical, shift_right_logical_p, sign, sign_p,
    sin, sin_p, sinh, sinh_p, sqrt, sqrt_p, square, square_p, stop_gradient, sub, sub_p,
    tan, tan_p, tanh, tanh_p, xor_p, zeta, zeta_p)
from pyjax._src.lax.shapes import (  # noqa: F401
    broadcast, broadcast_in_dim, broadcast_in_dim_p, broadcast_like, broadcast_shapes,
    broadcast_to_rank, broadcasted_iota, collapse, concatenate, concatenate_p,
    dynamic_index_in_dim, dynamic_slice, dynamic_slice_in_dim, dynamic_slice_p,
    dynamic_update_index_in_dim, dynamic_update_slice, dynamic_update_slice_in_dim,
    dynamic_update_slice_p, expand_dims, full, full_like, index_in_dim, iota, iota_p,
    pad, pad_p, reshape, reshape_p, rev, rev_p, shape_as_value, slice, slice_in_dim,
    slice_p, split, split_p, squeeze, squeeze_p, stack, stack_p, tile, tile_p,
    transpose, transpose_p, unstack, unstack_p, zeros_like_array)
from pyjax._src.lax.gather_scatter import (  # noqa: F401
    GatherDimensionNumbers, GatherScatterMode, ScatterDimensionNumbers, gather,
    gather_p, index_take, scatter, scatter_add, scatter_add_p, scatter_apply,
    scatter_max, scatter_max_p, scatter_min, scatter_min_p, scatter_mul, scatter_mul_p,
    scatter_p, scatter_sub, scatter_sub_p)
from pyjax._src.lax.reductions import (  # noqa: F401
    argmax, argmax_p, argmin, argmin_p, cumlogsumexp, cumlogsumexp_p, cummax, cummax_p,
    cummin, cummin_p, cumprod, cumprod_p, cumsum, cumsum_p, reduce, reduce_and,
    reduce_and_p, reduce_max, reduce_max_p, reduce_min, reduce_min_p, reduce_or,
    reduce_or_p, reduce_p, reduce_prod, reduce_prod_p, reduce_sum, reduce_sum_p,
    reduce_xor, reduce_xor_p)
from pyjax._src.lax.windowed import (  # noqa: F401
    reduce_window, reduce_window_max_p, reduce_window_min_p, reduce_window_p,
    reduce_window_shape_tuple, reduce_window_sum_p, select_and_gather_add_p,
    select_and_scatter_add_p)
from pyjax._src.lax.dot import (  # noqa: F401
    DotAlgorithmPreset, DotDimensionNumbers, Precision, PrecisionLike, batch_matmul,
    dot, dot_general, dot_general_p)
from pyjax._src.lax.convolution import (  # noqa: F401
    ConvDimensionNumbers, ConvGeneralDilatedDimensionNumbers, conv,
    conv_dimension_numbers, conv_general_dilated, conv_general_dilated_p,
    conv_general_permutations, conv_general_shape_tuple, conv_shape_tuple,
    conv_transpose, conv_transpose_shape_tuple, conv_with_general_padding,
    padtype_to_pads)
from pyjax._src.lax.conv_patches import (  # noqa: F401
    conv_general_dilated_local, conv_general_dilated_patches)
from pyjax._src.lax.ragged import (  # noqa: F401
    DotAlgorithm, RaggedDotDimensionNumbers, ragged_dot, ragged_dot_general,
    ragged_dot_general_p, scaled_dot)
from pyjax._src.lax.sorting import (  # noqa: F401
    sort, sort_key_val, sort_p, top_k, top_k_p)
from pyjax._src.lax.control_flow import (  # noqa: F401
    associative_scan, cond, fori_loop, map, scan, switch, while_loop)
from pyjax._src.lax.control_flow.conditionals import (  # noqa: F401
    cond_p)
from pyjax._src.lax.control_flow.loops import (  # noqa: F401
    scan_p, while_p)
from pyjax._src.lax.parallel import (  # noqa: F401
    all_gather, all_gather_p, all_to_all, all_to_all_p, axis_index, axis_index_p,
    axis_size, pbroadcast, pcast, pmax, pmax_p, pmean, pmin, pmin_p, ppermute,
    ppermute_p, precv, psend, pshuffle, psum, psum_p, psum_scatter, pswapaxes, pvary_p,
    ragged_all_to_all, ragged_all_to_all_p)
from pyjax._src.lax.fft import (  # noqa: F401
    FftType, fft, fft_p)
from pyjax._src.lax.rng import (  # noqa: F401
    RandomAlgorithm, rng_bit_generator, rng_bit_generator_p, rng_uniform, rng_uniform_p)
from pyjax._src.lax.buffers import (  # noqa: F401
    copy_p, dce_sink, dce_sink_p, empty, optimization_barrier, optimization_barrier_p,
    stage, stage_p)
from pyjax._src.lax.tokens import (  # noqa: F401
    after_all, after_all_p, create_token, create_token_p)
from pyjax._src.lax.higher_order import (  # noqa: F401
    composite, composite_p, platform_dependent, platform_index_p)
from pyjax._src.lax.solvers import (  # noqa: F401
    custom_linear_solve, custom_root, linear_solve_p)
from pyjax._src.lax.ann import (  # noqa: F401
    approx_max_k, approx_min_k, approx_top_k_p)
from pyjax._src.lax.sharding import (  # noqa: F401
    device_put_p, sharding_constraint_p, with_sharding_constraint)
from pyjax._src.lax.select_and_scatter import (  # noqa: F401
    select_and_scatter_p)
from pyjax._src.interpreters.ad import (  # noqa: F401
    stop_gradient_p)
from pyjax._src.lax import linalg  # noqa: F401  (the lax.linalg namespace)

__all__ = [
    "AccuracyMode", "ConvDimensionNumbers", "ConvGeneralDilatedDimensionNumbers",
    "DotAlgorithm", "DotAlgorithmPreset", "DotDimensionNumbers", "FftType",
    "GatherDimensionNumbers", "GatherScatterMode", "Precision", "PrecisionLike",
    "RaggedDotDimensionNumbers", "RandomAlgorithm", "RoundingMethod",
    "ScatterDimensionNumbers", "Tolerance", "abs", "abs_p", "acos", "acos_p", "acosh",
    "acosh_p", "add", "add_p", "after_all", "after_all_p", "all_gather", "all_gather_p",
    "all_to_all", "all_to_all_p", "and_p", "approx_max_k", "approx_min_k",
    "approx_top_k_p", "argmax", "argmax_p", "argmin", "argmin_p", "asin", "asin_p",
    "asinh", "asinh_p", "associative_scan", "atan", "atan2", "atan2_p", "atan_p",
    "atanh", "atanh_p", "axis_index", "axis_index_p", "axis_size", "batch_matmul",
    "bessel_i0e", "bessel_i0e_p", "bessel_i1e", "bessel_i1e_p", "betainc",
    "bitcast_convert_type", "bitcast_convert_type_p", "bitwise_and", "bitwise_not",
    "bitwise_or", "bitwise_xor", "broadcast", "broadcast_in_dim", "broadcast_in_dim_p",
    "broadcast_like", "broadcast_shapes", "broadcast_to_rank", "broadcasted_iota",
    "cbrt", "cbrt_p", "ceil", "ceil_p", "clamp", "clamp_p", "clz", "clz_p", "collapse",
    "complex", "complex_p", "composite", "composite_p", "concatenate", "concatenate_p",
    "cond", "cond_p", "conj", "conj_p", "conv", "conv_dimension_numbers",
    "conv_general_dilated", "conv_general_dilated_local", "conv_general_dilated_p",
    "conv_general_dilated_patches", "conv_general_permutations",
    "conv_general_shape_tuple", "conv_shape_tuple", "conv_transpose",
    "conv_transpose_shape_tuple", "conv_with_general_padding", "convert_element_type",
    "convert_element_type_p", "copy_p", "cos", "cos_p", "cosh", "cosh_p",
    "create_token", "create_token_p", "cumlogsumexp", "cumlogsumexp_p", "cummax",
    "cummax_p", "cummin", "cummin_p", "cumprod", "cumprod_p", "cumsum", "cumsum_p",
    "custom_linear_solve", "custom_root", "dce_sink", "dce_sink_p", "device_put_p",
    "digamma", "digamma_p", "div", "div_p", "dot", "dot_general", "dot_general_p",
    "dtype", "dynamic_index_in_dim", "dynamic_slice", "dynamic_slice_in_dim",
    "dynamic_slice_p", "dynamic_update_index_in_dim", "dynamic_update_slice",
    "dynamic_update_slice_in_dim", "dynamic_update_slice_p", "empty", "eq", "eq_p",
    "eq_to_p", "erf", "erf_inv", "erf_inv_p", "erf_p", "erfc", "erfc_p", "exp", "exp2",
    "exp2_p", "exp_p", "expand_dims", "expm1", "expm1_p", "fft", "fft_p", "floor",
    "floor_p", "fori_loop", "full", "full_like", "gather", "gather_p", "ge", "ge_p",
    "gt", "gt_p", "igamma", "igamma_grad_a", "igamma_grad_a_p", "igamma_p", "igammac",
    "igammac_p", "imag", "imag_p", "index_in_dim", "index_take", "integer_pow",
    "integer_pow_p", "iota", "iota_p", "is_finite", "is_finite_p", "le", "le_p",
    "le_to_p", "lgamma", "lgamma_p", "linear_solve_p", "log", "log1p", "log1p_p",
    "log_p", "logistic", "logistic_p", "lt", "lt_p", "lt_to_p", "map", "max", "max_p",
    "min", "min_p", "mul", "mul_p", "mulhi", "mulhi_p", "ne", "ne_p", "neg", "neg_p",
    "nextafter", "nextafter_p", "not_p", "optimization_barrier",
    "optimization_barrier_p", "or_p", "pad", "pad_p", "padtype_to_pads", "pbroadcast",
    "pcast", "platform_dependent", "platform_index_p", "pmax", "pmax_p", "pmean",
    "pmin", "pmin_p", "polygamma", "polygamma_p", "population_count",
    "population_count_p", "pow", "pow_p", "ppermute", "ppermute_p", "precv", "psend",
    "pshuffle", "psum", "psum_p", "psum_scatter", "pswapaxes", "pvary_p",
    "ragged_all_to_all", "ragged_all_to_all_p", "ragged_dot", "ragged_dot_general",
    "ragged_dot_general_p", "random_gamma_grad", "real", "real_p", "reciprocal",
    "reduce", "reduce_and", "reduce_and_p", "reduce_max", "reduce_max_p", "reduce_min",
    "reduce_min_p", "reduce_or", "reduce_or_p", "reduce_p", "reduce_precision",
    "reduce_precision_p", "reduce_prod", "reduce_prod_p", "reduce_sum", "reduce_sum_p",
    "reduce_window", "reduce_window_max_p", "reduce_window_min_p", "reduce_window_p",
    "reduce_window_shape_tuple", "reduce_window_sum_p", "reduce_xor", "reduce_xor_p",
    "regularized_incomplete_beta", "regularized_incomplete_beta_p", "rem", "rem_p",
    "reshape", "reshape_p", "rev", "rev_p", "rng_bit_generator", "rng_bit_generator_p",
    "rng_uniform", "rng_uniform_p", "round", "round_p", "rsqrt", "rsqrt_p",
    "scaled_dot", "scan", "scan_p", "scatter", "scatter_add", "scatter_add_p",
    "scatter_apply", "scatter_max", "scatter_max_p", "scatter_min", "scatter_min_p",
    "scatter_mul", "scatter_mul_p", "scatter_p", "scatter_sub", "scatter_sub_p",
    "select", "select_and_gather_add_p", "select_and_scatter_add_p",
    "select_and_scatter_p", "select_n", "select_n_p", "shape_as_value",
    "sharding_constraint_p", "shift_left", "shift_left_p", "shift_right_arithmetic",
    "shift_right_arithmetic_p", "shift_right_logical", "shift_right_logical_p", "sign",
    "sign_p", "sin", "sin_p", "sinh", "sinh_p", "slice", "slice_in_dim", "slice_p",
    "sort", "sort_key_val", "sort_p", "split", "split_p", "sqrt", "sqrt_p", "square",
    "square_p", "squeeze", "squeeze_p", "stack", "stack_p", "stage", "stage_p",
    "stop_gradient", "stop_gradient_p", "sub", "sub_p", "switch", "tan", "tan_p",
    "tanh", "tanh_p", "tile", "tile_p", "top_k", "top_k_p", "transpose", "transpose_p",
    "unstack", "unstack_p", "while_loop", "while_p", "with_sharding_constraint",
    "xor_p", "zeta", "zeta_p", "linalg"]
