"""Pallas kernel bodies shared by the interpret-mode tests (``tests/pallas``, run against
JAX) and the Triton lowering tests (``tests/gpu``); each takes the ``pallas`` and
``numpy`` modules to build with (JAX's or pyjax's), so this module imports neither."""


def kblocked_kernel(pl, jnp):
  """The k-blocked matmul body: a float32 scratch accumulator zeroed at the first k step
  and written out, converted, at the last."""
  def kernel(x_ref, y_ref, z_ref, acc_ref):
    @pl.when(pl.program_id(2) == 0)
    def _():
      acc_ref[...] = jnp.zeros_like(acc_ref)
    acc_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

    @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
    def _():
      z_ref[...] = acc_ref[...].astype(z_ref.dtype)
  return kernel
