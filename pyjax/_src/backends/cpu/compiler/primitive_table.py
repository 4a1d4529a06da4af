"""What the CPU compiler knows about each primitive: one row per primitive name.

Every stage's name sets (``simplify``'s elementwise and identity primitives, ``fusion``'s
layout, reduction and expensive primitives, ``lower_c``'s libm, float-only, integer-only and
half-rounding primitives, ``loops``' control flow, ``ir``'s inlined calls, ``tier_native``'s
inexact functions) are derived from the rows below, so a primitive is classified in one
place.  ``tests/compiler/test_compiler_primitive_table.py`` checks that every registered
primitive has a row, that the rows agree with the lowering rules and native kernels that exist
(``lower_c.RULES``, ``opaque``'s registry) and that every primitive has an eager
implementation.

The table is keyed by primitive *name*, as the eager implementations are: a backend sees
a jaxpr (primitive names, params and avals) and never imports ``lax`` (see
docs/architecture.md, "Keys").

Kinds (what fusion and the later stages do with the primitive):

``ew``        an elementwise C expression (``lower_c.RULES`` has its rule);
``layout``    changes only which element is read (an affine index map, computed inline);
``reduce``    a reduction fused into loop nests;
``dot``       ``dot_general``: a BLAS call (float32/float64) or a native kernel;
``kernel``    a hand-written native kernel of its own (``opaque.py``);
``control``   runs as a C loop or switch around native inner programs (``loops.py``);
``inline``    a call whose jaxpr (param ``body=``) is inlined into the program (``ir.py``);
``identity``  dropped by ``simplify`` (its output is its operand);
``barrier``   dropped by ``simplify``, every output its operand (multi-operand identity);
``rewritten`` replaced by ``simplify`` with other nodes (``add_any`` -> ``add``, two-output
              ``threefry2x32`` / ``iota_2x32_shape`` -> one node per output);
``host``      a NumPy step between native segments (the eager implementation).
              Pallas's kernel-jaxpr primitives (``get``, ``swap``, ``addupdate``,
              ``program_id``, ``masked_load``, ``masked_swap``, ``run_scoped``) are rows of
              this kind too: ``pallas_call`` discharges them before the compiler sees its body,
              and their eager implementation raises if one is ever bound outside a kernel.

Attributes:

``scalar``    elementwise: ``simplify`` may feed it a 0-d operand in place of a broadcast
              scalar (implicit broadcasting);
``libm``      lowered as the C library function of the same name (``sin`` -> ``sinf``/``sin``;
              ``kernels/vmath.py``'s own inline code where it has one);
``float``     C lowering only for floating-point operands;
``int``       C lowering only for integer results;
``nohalf``    no C lowering for float16/bfloat16 results;
``round``     a half-precision result is computed in float32 and rounded afterwards;
``inexact``   the lowering is not a correctly rounded operation (``numpy_tier/native.py`` runs it on
              the compiler's C in the NumPy tier too, so the tiers give the same bits);
``expensive`` fusion never recomputes it more often than it has elements;
``ordered``   a float reduction summed in XLA's order;
``internal``  a name of the compiler's (or of JAX's jaxprs), not a registered pyjax primitive.
"""
from __future__ import annotations

KINDS = ("ew", "layout", "reduce", "dot", "kernel", "control", "inline", "identity",
         "barrier", "rewritten", "host")
ATTRIBUTES = ("scalar", "libm", "float", "int", "nohalf", "round", "inexact", "expensive",
              "ordered", "internal")

# name                        kind       attributes
_ROWS = """
abs                           ew         scalar
acos                          ew         scalar libm float round inexact expensive
acosh                         ew         scalar libm float round inexact expensive
add                           ew         scalar
add_any                       rewritten
addupdate                     host
after_all                     host
all_gather                    host
all_to_all                    host
and                           ew         scalar
approx_top_k                  host
argmax                        reduce
argmin                        reduce
asin                          ew         scalar libm float round inexact expensive
asinh                         ew         scalar libm float round inexact expensive
atan                          ew         scalar libm float round inexact expensive
atan2                         ew         scalar float round inexact expensive
atanh                         ew         scalar libm float round inexact expensive
axis_index                    host
bcoo_dot_general              kernel
bcoo_dot_general_sampled      kernel
bcoo_extract                  host
bcoo_fromdense                host
bcoo_sort_indices             host
bcoo_spdot_general            host
bcoo_sum_duplicates           host
bcoo_todense                  host
bcoo_transpose                host
bcsr_dot_general              kernel
bcsr_extract                  host
bcsr_fromdense                host
bcsr_todense                  host
bessel_i0e                    host       scalar
bessel_i1e                    host       scalar
bitcast_convert_type          ew
broadcast_in_dim              layout
cbrt                          ew         scalar libm float round inexact expensive
ceil                          ew         scalar float
check                         host
cholesky                      host
cholesky_update               host
clamp                         ew         scalar
closed_call                   inline     body=call_jaxpr internal
clz                           ew         scalar int
complex                       host       scalar
composite                     host
concatenate                   kernel
cond                          control
conj                          host       scalar
conv_general_dilated          kernel
convert_element_type          ew         scalar
coo_fromdense                 host
coo_matmat                    kernel
coo_matvec                    kernel
coo_todense                   host
copy                          identity
copy_p                        identity   internal
core_call                     inline     body=call_jaxpr internal
cos                           ew         scalar libm float round inexact expensive
cosh                          ew         scalar libm float round inexact expensive
create_token                  host
csr_fromdense                 host
csr_matmat                    kernel
csr_matvec                    kernel
csr_todense                   host
cumlogsumexp                  kernel
cummax                        kernel
cummin                        kernel
cumprod                       kernel
cumsum                        kernel
custom_jvp_call               inline     body=call_jaxpr
custom_lin                    host
custom_linear_solve           host
custom_vjp_call               inline     body=call_jaxpr
custom_vmap_call              host
dce_sink                      host
debug_callback                host
debug_print                   host
device_put                    barrier
digamma                       host       scalar
div                           ew         scalar
dot_general                   dot
dynamic_slice                 kernel
dynamic_update_slice          kernel
eig                           host
eigh                          host
empty                         host
eq                            ew         scalar
eq_to                         host
erf                           ew         scalar libm float round inexact expensive
erf_inv                       ew         scalar float round inexact
erfc                          ew         scalar libm float round inexact expensive
exp                           ew         scalar libm float round inexact expensive
exp2                          ew         scalar libm float round inexact expensive
expm1                         ew         scalar libm float round inexact expensive
ffi_call                      host
fft                           host
floor                         ew         scalar float
fma                           ew         float
gather                        kernel
ge                            ew         scalar
geqrf                         host
get                           host
gt                            ew         scalar
hessenberg                    host
householder_product           host
igamma                        host       scalar
igamma_grad_a                 host
igammac                       host       scalar
imag                          host       scalar
integer_pow                   ew         scalar
io_callback                   host
iota                          layout
iota_2x32_shape               rewritten
is_finite                     ew         scalar float
jit                           inline     body=jaxpr
le                            ew         scalar
le_to                         host
lgamma                        ew         scalar float round inexact expensive
log                           ew         scalar libm float round inexact expensive
log1p                         ew         scalar libm float round inexact expensive
logistic                      ew         scalar float round inexact expensive
lt                            ew         scalar
lt_to                         host
lu                            kernel
lu_pivots_to_permutation      kernel
masked_load                   host
masked_swap                   host
max                           ew         scalar
min                           ew         scalar
mul                           ew         scalar
mulhi                         host
name                          host
ne                            ew         scalar
neg                           ew         scalar
nextafter                     ew         scalar nohalf
not                           ew         scalar
optimization_barrier          barrier
or                            ew         scalar
ormqr                         host
pad                           kernel
pallas_call                   inline     body=grid_loop
pbroadcast                    host
pjit                          inline     body=jaxpr internal
platform_index                host
pmax                          host
pmin                          host
polygamma                     host
population_count              ew         scalar int
pow                           ew         scalar float round inexact expensive
ppermute                      host
precv                         host
program_id                    host
psend                         host
psum                          host
pure_callback                 host
pvary                         identity
qr                            host
ragged_all_to_all             host
ragged_dot_general            host
random_gamma                  host
random_gamma_grad             host
real                          host       scalar
reduce                        host
reduce_and                    reduce
reduce_max                    reduce
reduce_min                    reduce
reduce_or                     reduce
reduce_precision              host       scalar
reduce_prod                   reduce     ordered
reduce_scatter                host
reduce_sum                    reduce     ordered
reduce_window                 host
reduce_window_max             kernel
reduce_window_min             kernel
reduce_window_sum             kernel
reduce_xor                    reduce
regularized_incomplete_beta   host
rem                           ew         scalar
remat2                        host
reshape                       layout
rev                           layout
rng_bit_generator             host
rng_uniform                   host
round                         ew         scalar float
rsqrt                         ew         scalar float round inexact
run_scoped                    host
scaled_dot                    host
scan                          control
scatter                       kernel
scatter-add                   kernel
scatter-max                   kernel
scatter-min                   kernel
scatter-mul                   kernel
scatter-sub                   kernel
schur                         host
select_and_gather_add         kernel
select_and_scatter            host
select_and_scatter_add        kernel
select_n                      ew         scalar
shard_map                     host
sharding_constraint           host
shift_left                    ew         scalar int
shift_right_arithmetic        ew         scalar int
shift_right_logical           ew         scalar int
sign                          ew         scalar
sin                           ew         scalar libm float round inexact expensive
sinh                          ew         scalar libm float round inexact expensive
slice                         layout
sort                          kernel
split                         kernel
spsolve                       host
sqrt                          ew         scalar libm float round
square                        ew         scalar
squeeze                       layout
stack                         kernel
stage                         host
stop_gradient                 identity
sub                           ew         scalar
svd                           host
swap                          host
symmetric_product             host
tan                           ew         scalar libm float round inexact expensive
tanh                          ew         scalar libm float round inexact expensive
threefry2x32                  rewritten
threefry2x32_0                ew         internal
threefry2x32_1                ew         internal
tile                          host
todense                       host
top_k                         kernel
transpose                     layout
triangular_solve              kernel
tridiagonal                   host
tridiagonal_solve             host
unstack                       host
while                         control
xor                           ew         scalar
zeta                          host
"""


class Row:
  """One primitive: its ``kind``, its ``attributes`` (a frozenset) and, for ``inline``
  calls, the param holding the inlined jaxpr (``body``)."""
  __slots__ = ("name", "kind", "attributes", "body")

  def __init__(self, name, kind, attributes, body=None):
    self.name, self.kind, self.attributes, self.body = name, kind, attributes, body

  def __repr__(self):
    return f"Row({self.name!r}, {self.kind!r}, {sorted(self.attributes)})"


def _parse(text):
  rows = {}
  for line in text.strip().splitlines():
    name, kind, *words = line.split()
    if kind not in KINDS:
      raise ValueError(f"primitive_table: unknown kind {kind!r} of {name}")
    body = None
    attrs = set()
    for w in words:
      if w.startswith("body="):
        body = w[5:]
      elif w in ATTRIBUTES:
        attrs.add(w)
      else:
        raise ValueError(f"primitive_table: unknown attribute {w!r} of {name}")
    if name in rows:
      raise ValueError(f"primitive_table: {name} has two rows")
    rows[name] = Row(name, kind, frozenset(attrs), body)
  return rows


ROWS = _parse(_ROWS)


def names(kind=None, attribute=None):
  """The names of the rows of ``kind`` (any kind when None) that have ``attribute``."""
  return frozenset(n for n, r in ROWS.items()
                   if (kind is None or r.kind == kind)
                   and (attribute is None or attribute in r.attributes))


def row(name):
  """The row of primitive ``name``, or None when the table does not know it."""
  return ROWS.get(name)


# --- the sets each stage uses -------------------------------------------------------------
SCALAR_OPERANDS = names(attribute="scalar")     # simplify: 0-d operands broadcast implicitly
IDENTITY = names("identity")                    # simplify: dropped
BARRIER = names("barrier")                      # simplify: dropped, outputs = operands
INLINE_CALLS = {n: r.body for n, r in ROWS.items() if r.kind == "inline"}   # ir: inlined
LAYOUT = names("layout")                        # fusion: affine index maps
REDUCE = names("reduce")                        # fusion: reductions in loop nests
ORDERED_REDUCTIONS = names(attribute="ordered")  # codegen: XLA's summation order
EXPENSIVE = names(attribute="expensive")        # fusion: never recomputed per consumer
C_EXPRESSIONS = names("ew")                     # lower_c: has an elementwise C rule
LIBM = names(attribute="libm")                  # lower_c: C library function of that name
FLOAT_ONLY = names(attribute="float")           # lower_c: float operands only
INT_ONLY = names(attribute="int")               # lower_c: integer results only
NO_HALF = names(attribute="nohalf")             # lower_c: no half-precision results
ROUND_HALF = names(attribute="round")           # lower_c: half results rounded afterwards
INEXACT = names(attribute="inexact")            # tier_native: not correctly rounded
CONTROL = names("control")                      # loops: native loops and switches

__all__ = ["KINDS", "ATTRIBUTES", "ROWS", "Row", "names", "row", "SCALAR_OPERANDS",
           "IDENTITY", "BARRIER", "INLINE_CALLS", "LAYOUT", "REDUCE", "ORDERED_REDUCTIONS",
           "EXPENSIVE", "C_EXPRESSIONS", "LIBM", "FLOAT_ONLY", "INT_ONLY", "NO_HALF",
           "ROUND_HALF", "INEXACT", "CONTROL"]
