"""jax.ffi: C targets with pyjax's call-frame ABI, eagerly, under jit (both tiers), vmap."""
import ctypes
import os
import shutil
import subprocess

import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax import ffi
from pyjax._src.backends.cpu import executable
from pyjax._src.errors import JaxRuntimeError

_C = r"""
#include "pyjax_ffi.h"

/* o = scale * x + y; y broadcasts along x's leading axis when its leading dim is 1 */
int32_t scale_add(PyjaxFfiCallFrame *f) {
  if (f->num_args != 2 || f->num_rets != 1)
    return pyjax_ffi_error(f, PYJAX_FFI_INVALID_ARGUMENT, "scale_add: 2 arguments, 1 result");
  const PyjaxFfiAttr *s = pyjax_ffi_attr(f, "scale");
  double sc = !s ? 1.0 : s->kind == PYJAX_FFI_ATTR_FLOAT ? s->f64 : (double)s->i64;
  if (f->args[0].dtype != PYJAX_FFI_F32 || f->args[1].dtype != PYJAX_FFI_F32)
    return pyjax_ffi_error(f, PYJAX_FFI_INVALID_ARGUMENT, "scale_add: float32 only, got %d",
                           (int)f->args[0].dtype);
  const float *x = f->args[0].data, *y = f->args[1].data;
  float *o = f->rets[0].data;
  int64_t n = pyjax_ffi_size(&f->rets[0]), ny = pyjax_ffi_size(&f->args[1]);
  for (int64_t i = 0; i < n; i++) o[i] = (float)(sc * x[i]) + y[i % ny];
  return PYJAX_FFI_OK;
}

/* o[k] = the dims of every argument: rank, dims..., per argument; the rest -1 */
int32_t arg_dims(PyjaxFfiCallFrame *f) {
  int32_t *o = f->rets[0].data;
  int64_t n = pyjax_ffi_size(&f->rets[0]), k = 0;
  for (int64_t i = 0; i < n; i++) o[i] = -1;
  for (int32_t a = 0; a < f->num_args; a++) {
    if (k < n) o[k++] = f->args[a].rank;
    for (int32_t d = 0; d < f->args[a].rank && k < n; d++) o[k++] = (int32_t)f->args[a].dims[d];
  }
  return 0;
}

/* the argument's memory, in memory order, into a flat result; and the layout */
int32_t memory_order(PyjaxFfiCallFrame *f) {
  const float *x = f->args[0].data;
  float *o = f->rets[0].data;
  int32_t *lay = f->rets[1].data;
  for (int64_t i = 0; i < pyjax_ffi_size(&f->args[0]); i++) o[i] = x[i];
  for (int32_t d = 0; d < f->args[0].rank; d++) lay[d] = f->args[0].layout[d];
  return 0;
}

/* o's memory = 0, 1, 2, ... in memory order */
int32_t iota_memory(PyjaxFfiCallFrame *f) {
  float *o = f->rets[0].data;
  for (int64_t i = 0; i < pyjax_ffi_size(&f->rets[0]); i++) o[i] = (float)i;
  return 0;
}

/* the aliased result holds the argument on entry: add one in place */
int32_t inc_inplace(PyjaxFfiCallFrame *f) {
  if (f->rets[0].data != f->args[0].data)
    return pyjax_ffi_error(f, PYJAX_FFI_INTERNAL, "not aliased");
  int32_t *o = f->rets[0].data;
  for (int64_t i = 0; i < pyjax_ffi_size(&f->rets[0]); i++) o[i] += 1;
  return 0;
}

int32_t fail(PyjaxFfiCallFrame *f) {
  return pyjax_ffi_error(f, PYJAX_FFI_INVALID_ARGUMENT, "bad value %d", 42);
}

/* attributes: n (int), x (float), s (string length), arr (int32 array sum), flag */
int32_t read_attrs(PyjaxFfiCallFrame *f) {
  float *o = f->rets[0].data;
  const PyjaxFfiAttr *n = pyjax_ffi_attr(f, "n"), *x = pyjax_ffi_attr(f, "x"),
                     *s = pyjax_ffi_attr(f, "s"), *arr = pyjax_ffi_attr(f, "arr"),
                     *flag = pyjax_ffi_attr(f, "flag");
  if (!n || !x || !s || !arr || !flag || n->kind != PYJAX_FFI_ATTR_INT ||
      x->kind != PYJAX_FFI_ATTR_FLOAT || s->kind != PYJAX_FFI_ATTR_STRING ||
      arr->kind != PYJAX_FFI_ATTR_ARRAY || arr->dtype != PYJAX_FFI_S32 ||
      flag->dtype != PYJAX_FFI_BOOL)
    return pyjax_ffi_error(f, PYJAX_FFI_INVALID_ARGUMENT, "attributes");
  const int32_t *a = arr->data;
  double sum = 0;
  for (int64_t i = 0; i < arr->size; i++) sum += a[i];
  o[0] = (float)n->i64; o[1] = (float)x->f64; o[2] = (float)s->size; o[3] = (float)sum;
  o[4] = (float)flag->i64; o[5] = strcmp((const char *)s->data, "hello") == 0;
  return 0;
}

static int64_t calls = 0;
int32_t count_call(PyjaxFfiCallFrame *f) {
  calls++;
  *(int32_t *)f->rets[0].data = (int32_t)calls;
  return 0;
}
int64_t get_calls(void) { return calls; }

/* two results: x + 1 and x * 2 (float32) */
int32_t two_outs(PyjaxFfiCallFrame *f) {
  const float *x = f->args[0].data;
  float *a = f->rets[0].data, *b = f->rets[1].data;
  for (int64_t i = 0; i < pyjax_ffi_size(&f->args[0]); i++) { a[i] = x[i] + 1; b[i] = x[i] * 2; }
  return 0;
}
"""

_NAMES = ["scale_add", "arg_dims", "memory_order", "iota_memory", "inc_inplace", "fail",
          "read_attrs", "count_call", "two_outs"]


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
  cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
  if cc is None:
    pytest.skip("no C compiler")
  d = tmp_path_factory.mktemp("ffi")
  src, so = d / "kernels.c", d / "kernels.so"
  src.write_text(_C)
  subprocess.run([cc, "-shared", "-fPIC", "-O1", "-I", ffi.include_dir(), str(src), "-o",
                  str(so)], check=True, capture_output=True)
  lib = ctypes.CDLL(str(so))
  for i, name in enumerate(_NAMES):
    fn = getattr(lib, name)
    # every way of passing the function: capsule, ctypes pointer, stage dict, address
    how = [ffi.pycapsule(fn), fn, {"execute": ffi.pycapsule(fn)},
           ctypes.cast(fn, ctypes.c_void_p).value][i % 4]
    ffi.register_ffi_target(f"test_{name}", how, platform="cpu")
  lib.get_calls.restype = ctypes.c_int64
  return lib


@pytest.fixture(params=["eager", "jit", "jit_native"])
def mode(request):
  if request.param == "jit_native":
    with executable.compile_mode_override("sync"):
      yield request.param
  else:
    yield request.param


def _run(mode, f, *args):
  if mode == "eager":
    return f(*args)
  return pyjax.jit(f)(*args)


def _sds(shape, dtype):
  return pyjax.ShapeDtypeStruct(shape, dtype)


def _scale_add(x, y, **kw):
  return ffi.ffi_call("test_scale_add", _sds(x.shape, x.dtype), **kw)(x, y, scale=2.0)


def test_scale_add(lib, mode):
  x = np.arange(12, dtype=np.float32).reshape(3, 4)
  y = np.linspace(-1, 1, 4).astype(np.float32)

  def f(x, y):   # with native work around the call
    return jnp.sin(_scale_add(jnp.cos(x), y)) * 3.0
  out = _run(mode, f, jnp.asarray(x), jnp.asarray(y))
  assert out.dtype == jnp.float32 and out.shape == (3, 4)
  np.testing.assert_allclose(out, np.sin(2 * np.cos(x) + y) * 3, rtol=2e-6, atol=2e-6)


def test_scalars_and_numpy_inputs(lib, mode):
  x = np.arange(3, dtype=np.float32)
  out = _run(mode, lambda x: ffi.ffi_call("test_scale_add", _sds((3,), jnp.float32))(
      x, 2.0, scale=1), x)      # a weakly typed scalar argument (rank 0)
  np.testing.assert_array_equal(out, x + 2)
  s = _run(mode, lambda a, b: ffi.ffi_call("test_scale_add", _sds((), jnp.float32))(
      a, b, scale=3), np.float32(2), np.float32(1))
  assert s.shape == () and s.dtype == jnp.float32 and float(s) == 7.0


def test_native_tier_runs_the_target(lib, tmp_path):
  from pyjax import profiler
  import glob
  import gzip
  import json
  x = jnp.arange(8.0, dtype=jnp.float32)
  f = pyjax.jit(lambda x: jnp.exp(_scale_add(x * 2, x)) + 1)
  with executable.compile_mode_override("sync"):
    with profiler.trace(tmp_path):
      out = f(x)
  np.testing.assert_allclose(out, np.exp(5 * np.arange(8.0)) + 1, rtol=1e-5)
  (p,) = glob.glob(str(tmp_path / "plugins/profile/*/*.trace.json.gz"))
  evs = json.load(gzip.open(p, "rt"))["traceEvents"]
  assert [e["args"]["tier"] for e in evs if e["name"] == "jit_<lambda>"] == ["native"]
  assert [e["name"] for e in evs if e.get("cat") == "ffi"] == ["ffi test_scale_add"]


def test_jaxpr(lib):
  x = jnp.ones((2, 3), jnp.float32)
  j = pyjax.make_jaxpr(lambda x: _scale_add(x, x, vmap_method="sequential"))(x)
  text = str(j)
  assert "ffi_call[" in text and "target_name=test_scale_add" in text
  assert "input_layouts=((1, 0), (1, 0))" in text and "attributes=(('scale', 2.0),)" in text


@pytest.mark.parametrize("method", ["sequential", "sequential_unrolled", "expand_dims",
                                    "broadcast_all"])
def test_vmap_methods(lib, method, mode):
  xs = np.arange(15, dtype=np.float32).reshape(5, 3)
  y = np.array([1.0, -2.0, 0.5], np.float32)
  f = pyjax.vmap(lambda x, y: _scale_add(x, y, vmap_method=method), in_axes=(0, None))
  out = _run(mode, f, jnp.asarray(xs), jnp.asarray(y))
  np.testing.assert_allclose(out, 2 * xs + y)
  # what the target sees
  dims = pyjax.vmap(lambda x, y: ffi.ffi_call("test_arg_dims", _sds((8,), jnp.int32),
                                              vmap_method=method)(x, y), in_axes=(0, None))
  got = np.asarray(_run(mode, dims, jnp.asarray(xs), jnp.asarray(y)))
  want_y = {"sequential": [1, 3], "sequential_unrolled": [1, 3], "expand_dims": [2, 1, 3],
            "broadcast_all": [2, 5, 3]}[method]
  want_x = [1, 3] if method.startswith("sequential") else [2, 5, 3]
  row = (want_x + want_y + [-1] * 8)[:8]
  if method.startswith("sequential"):    # one call per example
    want = np.tile(row, (5, 1))
  else:                                  # one call writing the (5, 8) result
    want = np.full((5, 8), -1)
    want[0] = row
  np.testing.assert_array_equal(got, want)


def test_vmap_method_none_raises(lib):
  f = pyjax.vmap(lambda x: ffi.ffi_call("test_scale_add", _sds((3,), jnp.float32))(x, x))
  with pytest.raises(NotImplementedError, match="vmap is only supported for the ffi_call "
                     "primitive when vmap_method is one of"):
    f(jnp.ones((2, 3), jnp.float32))
  with pytest.raises(ValueError, match="vmap_method must be on of the allowed methods"):
    ffi.ffi_call("test_scale_add", _sds((3,), jnp.float32), vmap_method="bogus")


def test_vmap_matches_jax_structure(lib):
  jax = pytest.importorskip("jax")
  # the batching rule binds what JAX's does: compare the jaxprs' equation structure
  def body(ffi_mod, x):
    return ffi_mod.ffi_call("t", jax.ShapeDtypeStruct((3,), np.float32),
                            vmap_method="expand_dims")(x, np.float32(1) * x)
  ours = pyjax.make_jaxpr(pyjax.vmap(lambda x: body(ffi, x)))(jnp.ones((4, 3), jnp.float32))
  theirs = jax.make_jaxpr(jax.vmap(lambda x: body(jax.ffi, x)))(np.ones((4, 3), np.float32))
  prim = [e for e in ours.jaxpr.eqns if e.primitive.name == "ffi_call"][0]
  tprim = [e for e in theirs.jaxpr.eqns if e.primitive.name == "ffi_call"][0]
  assert prim.params["input_layouts"] == tprim.params["input_layouts"]
  assert prim.params["output_layouts"] == tprim.params["output_layouts"]
  assert [tuple(a.shape) for a in prim.params["result_avals"]] == \
      [tuple(a.shape) for a in tprim.params["result_avals"]]


def test_grad_raises(lib):
  f = lambda x: _scale_add(x, x).sum()  # noqa: E731
  with pytest.raises(ValueError, match="The FFI call to `test_scale_add` cannot be "
                     "differentiated"):
    pyjax.grad(f)(jnp.ones(3, jnp.float32))


def test_layouts(lib, mode):
  x = np.arange(6, dtype=np.float32).reshape(2, 3)
  col = ffi.ffi_call("test_memory_order", [_sds((6,), np.float32), _sds((2,), np.int32)],
                     input_layouts=[(1, 0)])
  flat, lay = _run(mode, col, jnp.asarray(x))
  np.testing.assert_array_equal(flat, x.T.ravel())    # column-major memory
  np.testing.assert_array_equal(lay, [1, 0])
  row = ffi.ffi_call("test_memory_order", [_sds((6,), np.float32), _sds((2,), np.int32)])
  flat, lay = _run(mode, row, jnp.asarray(x))
  np.testing.assert_array_equal(flat, x.ravel())
  np.testing.assert_array_equal(lay, [0, 1])
  out = _run(mode, ffi.ffi_call("test_iota_memory", _sds((2, 3), np.float32),
                                output_layouts=(1, 0)))
  np.testing.assert_array_equal(out, np.arange(6, dtype=np.float32).reshape(3, 2).T)
  with pytest.raises(ValueError, match="number of input layouts"):
    ffi.ffi_call("test_memory_order", _sds((6,), np.float32), input_layouts=[None, None])(x)


def test_input_output_aliases(lib, mode):
  x = jnp.arange(5, dtype=jnp.int32)
  f = ffi.ffi_call("test_inc_inplace", _sds((5,), jnp.int32), input_output_aliases={0: 0})
  out = _run(mode, f, x)
  np.testing.assert_array_equal(out, np.arange(5) + 1)
  np.testing.assert_array_equal(x, np.arange(5))     # the input is unchanged
  with pytest.raises(ValueError, match="input_output_aliases contains the mapping '0:0' "
                     "referring to an input with abstract value"):
    ffi.ffi_call("test_inc_inplace", _sds((4,), jnp.int32), input_output_aliases={0: 0})(x)
  with pytest.raises(ValueError, match="outside the range"):
    ffi.ffi_call("test_inc_inplace", _sds((5,), jnp.int32), input_output_aliases={1: 0})(x)


def test_errors_surface(lib, mode):
  f = ffi.ffi_call("test_fail", _sds((), jnp.float32))
  with pytest.raises(JaxRuntimeError, match="^INVALID_ARGUMENT: bad value 42$"):
    np.asarray(_run(mode, f, jnp.ones(2)))
  g = ffi.ffi_call("test_scale_add", _sds((2,), jnp.float32))
  with pytest.raises(JaxRuntimeError, match="float32 only"):
    np.asarray(_run(mode, g, jnp.ones(2, jnp.int32), jnp.ones(2, jnp.int32)))
  h = ffi.ffi_call("no_such_target", _sds((2,), jnp.float32))
  with pytest.raises(JaxRuntimeError, match="No registered implementation for FFI custom call "
                     "to no_such_target"):
    np.asarray(_run(mode, h, jnp.ones(2)))
  pyjax.make_jaxpr(h)(jnp.ones(2))   # staging needs no registered target


def test_attributes(lib, mode):
  f = ffi.ffi_call("test_read_attrs", _sds((6,), jnp.float32))
  out = _run(mode, lambda x: f(x, n=7, x=2.5, s="hello", arr=np.array([1, 2, 3], np.int32),
                               flag=True), jnp.ones(1))
  np.testing.assert_array_equal(out, [7, 2.5, 5, 6, 1, 1])
  with pytest.raises(TypeError, match="dict attribute"):
    f(jnp.ones(1), d={"a": 1})
  with pytest.raises(TypeError, match="Non-hashable keyword argument to ffi_call"):
    f(jnp.ones(1), lst=[1, 2])


def test_side_effects(lib):
  before = lib.get_calls()
  pure = ffi.ffi_call("test_count_call", _sds((), jnp.int32))
  effectful = ffi.ffi_call("test_count_call", _sds((), jnp.int32), has_side_effect=True)

  @pyjax.jit
  def f(x):
    pure(x)          # unused and pure: dropped
    effectful(x)     # unused but effectful: runs
    return x + 1
  f(jnp.ones(()))
  assert lib.get_calls() == before + 1
  assert "FFI" in str(pyjax.make_jaxpr(lambda x: effectful(x))(1.0).jaxpr.effects)


def test_multiple_results(lib, mode):
  x = jnp.arange(4.0, dtype=jnp.float32)
  as_list = ffi.ffi_call("test_two_outs", [_sds((4,), jnp.float32)] * 2)
  as_tuple = ffi.ffi_call("test_two_outs", (_sds((4,), jnp.float32),) * 2)
  a = _run(mode, as_list, x)
  b = _run(mode, as_tuple, x)
  assert isinstance(a, list) and isinstance(b, tuple)
  for r in (a, b):
    np.testing.assert_array_equal(r[0], np.arange(4) + 1)
    np.testing.assert_array_equal(r[1], np.arange(4) * 2)


def test_registration_errors(lib):
  with pytest.raises(ValueError, match="api_version"):
    ffi.register_ffi_target("x", lib.fail, api_version=0)
  with pytest.raises(TypeError, match="PyCapsule"):
    ffi.register_ffi_target("x", "not a function")
  with pytest.raises(ValueError, match="execute"):
    ffi.register_ffi_target("x", {"prepare": ffi.pycapsule(lib.fail)})
  with pytest.raises(ValueError, match="register_ffi_type_id is not supported"):
    ffi.register_ffi_type_id("t", None)
  assert os.path.exists(os.path.join(ffi.include_dir(), "pyjax_ffi.h"))
