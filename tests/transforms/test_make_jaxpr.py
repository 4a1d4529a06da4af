"""make_jaxpr / eval_shape / ShapeDtypeStruct and the jaxpr text (nested jit equations,
shared jaxprs, unused outputs, line breaking), against JAX's output."""
import functools
import types

import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax import lax
from pyjax._src import api, core, errors
from pyjax._src.runtime.array import SingleDeviceSharding

f32 = np.float32
P = types.SimpleNamespace(jit=api.jit, make_jaxpr=api.make_jaxpr, jnp=jnp, lax=lax,
                          devices=pyjax.devices)


@pytest.fixture
def J(jax):
  import jax.numpy as jjnp
  from jax import lax as jlax
  return types.SimpleNamespace(jit=jax.jit, make_jaxpr=jax.make_jaxpr, jnp=jjnp, lax=jlax,
                               devices=jax.devices)


def _bf16(shape):
  return np.ones(shape, f32).astype(jnp.bfloat16)


# Each program is built from a namespace (pyjax's or JAX's), so the same code runs on both.
PROGRAMS = {
    "sin_cos": (lambda M: lambda x: M.jnp.sin(x) * M.jnp.cos(x), [np.ones((2, 3), f32)]),
    "seed_example": (lambda M: lambda a, b: M.jnp.sin(a + 1.0) * b,
                     [np.ones((3, 4), f32), np.ones(4, f32)]),
    "two_short_eqns": (lambda M: lambda x: M.jnp.sin(x) * 2, [np.ones(3, f32)]),
    "unused_output": (lambda M: lambda x: (M.jnp.sin(x), x)[1], [np.ones(3, f32)]),
    "nested": (lambda M: lambda x: M.jit(lambda y: M.jnp.sin(y) * 2)(x) + 1,
               [np.ones(3, f32)]),
    "nested_twice": (lambda M: M.jit(lambda x: M.jit(M.jnp.sin)(x) * 2), [np.ones(3, f32)]),
    "jit_of_jit": (lambda M: M.jit(M.jit(lambda x: x * 2)), [f32(1)]),
    "closure_tracer": (lambda M: lambda x: M.jit(lambda y: y + x)(x * 2), [np.ones(3, f32)]),
    "more_than_10_eqns": (lambda M: lambda x: M.jit(
        lambda x: functools.reduce(lambda a, i: a + i, range(11), x))(x), [f32(1)]),
    "identity": (lambda M: lambda x: M.jit(lambda x: x)(x), [f32(1)]),
    "literal_outputs": (lambda M: lambda x: M.jit(lambda x: (x, 1.0, x))(x), [f32(1)]),
    "dropped_inner_outputs": (
        lambda M: (lambda g: lambda x: g(x, 2.)[0] + g(x, x)[1])(
            M.jit(lambda x, y: (x * y, x + y))), [np.ones(3, f32)]),
    "donated": (lambda M: lambda x: M.jit(lambda x, y: x, donate_argnums=1)(x, x * 2),
                [np.ones(3, f32)]),
    "keep_unused": (lambda M: lambda x: M.jit(lambda y, z: y, keep_unused=True)(x, x),
                    [np.ones(3, f32)]),
    "inline": (lambda M: lambda x: M.jit(lambda y: y * 2, inline=True)(x) + 1,
               [np.ones(3, f32)]),
    "pytree_args": (lambda M: lambda d: M.jit(lambda d: {"a": d["x"] + d["y"]})(d),
                    [{"x": 1., "y": np.ones(2, f32)}]),
    "shared": (lambda M: (lambda g: lambda x: g(x) + g(x * 2))(M.jit(lambda y: M.jnp.cos(y))),
               [np.ones(3, f32)]),
    "shared_inside_jit": (lambda M: (lambda g: M.jit(lambda x: g(x) + g(2 * x)))(
        M.jit(lambda y: y * 3.)), [np.ones(3, f32)]),
    "jit_closure_const": (lambda M: (lambda c: lambda x: M.jit(lambda y: y * c)(x))(
        np.arange(3., dtype=f32)), [np.ones(3, f32)]),
    "jit_device": (lambda M: lambda x: M.jit(lambda y: y * 2, device=M.devices()[0])(x),
                   [f32(1)]),
    "reductions": (lambda M: lambda x: M.jnp.sum(x, axis=0) + M.jnp.max(x),
                   [np.ones((3, 4), f32)]),
    "reshape_transpose": (lambda M: lambda x: M.jnp.reshape(x, (4, 3)).T,
                          [np.ones((3, 4), f32)]),
    "lax_ops": (lambda M: lambda x, y: M.lax.add(M.lax.mul(x, y), M.lax.exp(x)),
                [np.ones(3, f32), np.ones(3, f32)]),
    "compare_convert": (lambda M: lambda x: (x > 2, x * 2,
                                             M.lax.convert_element_type(x, M.jnp.int8)),
                        [np.ones(3, f32)]),
    "int32": (lambda M: lambda x: x * 2 + 1, [np.arange(3, dtype=np.int32)]),
    "int8_uint8": (lambda M: lambda x, y: (x + x, y * y),
                   [np.ones(3, np.int8), np.ones(3, np.uint8)]),
    "bool": (lambda M: lambda x, y: M.jnp.logical_and(x, y) == True,  # noqa: E712
             [np.ones(3, bool), np.zeros(3, bool)]),
    "bfloat16": (lambda M: lambda x: x * 0.1, [_bf16(3)]),
    "float16": (lambda M: lambda x: M.jnp.exp(x), [np.ones(3, np.float16)]),
    "weak_arg": (lambda M: lambda x, y: x + y, [1.0, np.ones(2, f32)]),
    "zero_size": (lambda M: lambda x: M.jnp.sin(x), [np.ones((0, 3), f32)]),
    "one_size": (lambda M: lambda x: M.jnp.sum(x), [np.ones((1, 1), f32)]),
    "many_args_wrap": (lambda M: lambda *a: a[0], [f32(1)] * 12),
    "many_outs_wrap": (lambda M: lambda *a: a, [f32(1)] * 14),
    "none_output": (lambda M: lambda x: None, [f32(1)]),
    "numpy_const": (lambda M: lambda x: x * np.arange(3, dtype=f32), [np.ones(3, f32)]),
    "numpy_scalars": (lambda M: lambda x: x * np.float32(2.5) + np.int32(3),
                      [np.ones(2, f32)]),
    "nan_literal": (lambda M: lambda x: x + M.jnp.nan, [np.ones(2, f32)]),
    "complex_literal": (lambda M: lambda x: x * (1 + 2j), [np.ones(2, np.complex64)]),
    "dot_matmul": (lambda M: lambda x, y: (M.jnp.dot(x, y), x @ y),
                   [np.ones((2, 3), f32), np.ones((3, 4), f32)]),
    "slicing": (lambda M: lambda x: (x[1:, :2], x[0]), [np.ones((3, 4), f32)]),
    "concatenate": (lambda M: lambda x: M.jnp.concatenate([x, x]), [np.ones(3, f32)]),
    "no_args": (lambda M: lambda: M.jnp.ones(2) + 1, []),
    "zeros_sum": (lambda M: lambda x: M.jnp.zeros(3).sum() + x, [f32(1)]),
    "astype_arange": (lambda M: lambda x: x.astype(M.jnp.int32) + M.jnp.arange(3),
                      [np.ones(3, f32)]),
    "select": (lambda M: lambda p, x, y: M.lax.select(p, x, y),
               [np.ones(3, bool), np.ones(3, f32), np.zeros(3, f32)]),
}


@pytest.mark.filterwarnings("ignore:backend and device argument")
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_jaxpr_text_matches_jax(J, name):
  mk, args = PROGRAMS[name]
  ours = str(P.make_jaxpr(mk(P))(*args))
  ref = str(J.make_jaxpr(mk(J))(*args))
  assert ours == ref


def test_static_argnums_and_kwargs_match_jax(J):
  def mk(M):
    return M.jit(lambda x, n: x * n, static_argnums=1)
  assert (str(P.make_jaxpr(mk(P), static_argnums=1)(f32(1), 2))
          == str(J.make_jaxpr(mk(J), static_argnums=1)(f32(1), 2)))
  assert (str(P.make_jaxpr(lambda x, **kw: x * kw["a"])(1., a=2.))
          == str(J.make_jaxpr(lambda x, **kw: x * kw["a"])(1., a=2.)))


def test_seed_example_text():
  text = str(api.make_jaxpr(lambda a, b: jnp.sin(a + 1.0) * b)(jnp.ones((3, 4)), jnp.ones(4)))
  assert text == ("{ lambda ; a:f32[3,4] b:f32[4]. let\n"
                  "    c:f32[3,4] = add a 1.0:f32[]\n"
                  "    d:f32[3,4] = sin c\n"
                  "    e:f32[1,4] = broadcast_in_dim[broadcast_dimensions=(1,)] b\n"
                  "    f:f32[3,4] = mul d e\n"
                  "  in (f,) }")


def test_nested_jit_text_without_jax():
  def f(x):
    return jnp.sin(x) * 2
  text = str(api.make_jaxpr(lambda x: api.jit(f)(x) + 1)(jnp.ones(3)))
  assert text == ("{ lambda ; a:f32[3]. let\n"
                  "    b:f32[3] = jit[\n"
                  "      name=f\n"
                  "      jaxpr={ lambda ; a:f32[3]. let\n"
                  "          c:f32[3] = sin a\n"
                  "          b:f32[3] = mul c 2.0:f32[]\n"
                  "        in (b,) }\n"
                  "    ] a\n"
                  "    d:f32[3] = add b 1.0:f32[]\n"
                  "  in (d,) }")
  g = api.jit(lambda y: y * 3.)
  text = str(api.make_jaxpr(lambda x: g(x) + g(x))(1.))
  assert text == ("let lambda = { lambda ; a:f32[]. let b:f32[] = mul a 3.0:f32[] in (b,) } in\n"
                  "{ lambda ; c:f32[]. let\n"
                  "    d:f32[] = jit[name=<lambda> jaxpr=lambda] c\n"
                  "    e:f32[] = jit[name=<lambda> jaxpr=lambda] c\n"
                  "    f:f32[] = add d e\n"
                  "  in (f,) }")


def test_short_jaxprs_print_on_one_line():
  text = str(api.make_jaxpr(lambda x: jnp.sin(jnp.cos(x)))(1.))
  assert text == "{ lambda ; a:f32[]. let b:f32[] = cos a; c:f32[] = sin b in (c,) }"
  assert str(api.make_jaxpr(lambda x: x)(1.)) == "{ lambda ; a:f32[]. let  in (a,) }"
  assert str(api.make_jaxpr(lambda: 1.0)()) == "{ lambda ; . let  in (1.0:f32[],) }"
  eqn = api.make_jaxpr(lambda x: x + 1)(1.).eqns[0]
  assert str(eqn) == "a:f32[] = add b 1.0:f32[]"  # fresh names, outputs first (as JAX)


def test_jit_equation_params():
  closed = api.make_jaxpr(lambda x: api.jit(lambda y: y * 2, donate_argnums=0)(x))(1.)
  eqn = closed.eqns[0]
  assert eqn.primitive.name == "jit"
  p = eqn.params
  assert set(p) == {"jaxpr", "in_shardings", "out_shardings", "in_layouts", "out_layouts",
                    "donated_invars", "ctx_mesh", "name", "keep_unused", "inline",
                    "compiler_options_kvs"}
  assert p["name"] == "<lambda>" and p["donated_invars"] == (True,)
  assert isinstance(p["jaxpr"], core.ClosedJaxpr)
  assert repr(p["in_shardings"][0]) == "UnspecifiedValue"
  hash(tuple(sorted((k, v) for k, v in p.items() if k != "ctx_mesh")))
  # the jit equation evaluates eagerly through its executable
  out = core.eval_jaxpr(closed.jaxpr, closed.consts, jnp.float32(3.))
  assert float(out[0]) == 6.0


def test_make_jaxpr_options():
  closed, shape = api.make_jaxpr(lambda x: (x * 2, x.sum()), return_shape=True)(
      api.ShapeDtypeStruct((2, 3), jnp.float32))
  assert shape == (api.ShapeDtypeStruct((2, 3), jnp.float32),
                   api.ShapeDtypeStruct((), jnp.float32))
  closed = api.make_jaxpr(lambda x, n: x * n, static_argnums=1)(jnp.ones(2), 3)
  assert str(closed) == "{ lambda ; a:f32[2]. let b:f32[2] = mul a 3.0:f32[] in (b,) }"
  assert closed.in_avals[0].shape == (2,) and closed.out_avals[0].dtype == np.float32
  with pytest.raises(TypeError, match="Expected a callable value, got 3"):
    api.make_jaxpr(3)


def test_make_jaxpr_traces_each_call():
  count = []

  def f(x):
    count.append(1)
    return x + 1
  mj = api.make_jaxpr(f)
  mj(1.)
  mj(1.)
  assert len(count) == 2


def test_eval_shape():
  s = api.ShapeDtypeStruct((2, 3), jnp.float32)
  out = api.eval_shape(lambda x, y: (x * y, {"a": x.sum()}), s, 2.)
  assert out == (api.ShapeDtypeStruct((2, 3), jnp.float32),
                 {"a": api.ShapeDtypeStruct((), jnp.float32)})
  assert repr(api.eval_shape(lambda x: x * 2, 1.)) == \
      "ShapeDtypeStruct(shape=(), dtype=float32, weak_type=True)"
  assert api.eval_shape(lambda x: x * 2, np.ones(3)).dtype == np.float32
  assert api.eval_shape(lambda x: x.astype(jnp.int8), np.ones((0, 2))).shape == (0, 2)
  # anything with shape and dtype
  duck = types.SimpleNamespace(shape=(4,), dtype=np.dtype(np.uint8))
  assert api.eval_shape(lambda x: x + 1, duck) == api.ShapeDtypeStruct((4,), np.uint8)
  with pytest.raises(TypeError, match="not a valid JAX type"):
    api.eval_shape(lambda x: (x, "a"), 1.)


def test_shape_dtype_struct(jax):
  s = api.ShapeDtypeStruct((2, 3), jnp.float32)
  js = jax.ShapeDtypeStruct((2, 3), np.float32)
  assert repr(s) == repr(js) == "ShapeDtypeStruct(shape=(2, 3), dtype=float32)"
  assert (s.size, s.ndim, s.weak_type, s.sharding) == (js.size, js.ndim, False, None)
  assert s == api.ShapeDtypeStruct([2, 3], "float32") and hash(s) == hash(
      api.ShapeDtypeStruct((2, 3), np.float32))
  assert s != api.ShapeDtypeStruct((2, 3), np.float32, weak_type=True)
  assert repr(api.ShapeDtypeStruct((), "float32", weak_type=True)) == repr(
      jax.ShapeDtypeStruct((), "float32", weak_type=True))
  assert repr(api.ShapeDtypeStruct((2,), np.int64)) == "ShapeDtypeStruct(shape=(2,), dtype=int64)"
  assert repr(api.ShapeDtypeStruct((2,), bool)) == "ShapeDtypeStruct(shape=(2,), dtype=bool)"
  sh = SingleDeviceSharding(pyjax.devices()[0])
  assert repr(api.ShapeDtypeStruct((2,), jnp.float32, sharding=sh)) == (
      "ShapeDtypeStruct(shape=(2,), dtype=float32, sharding=SingleDeviceSharding("
      "device=CpuDevice(id=0), memory_kind=device))")
  assert s.update(shape=(4,)) == api.ShapeDtypeStruct((4,), jnp.float32)
  with pytest.raises(ValueError, match="ShapeDtypeStruct: dtype must be specified."):
    api.ShapeDtypeStruct((2,), None)
  assert jnp.zeros(s.shape, s.dtype).shape == (2, 3)


# --- tracer errors carry JAX's provenance text --------------------------------------------
def _message(fn):
  with pytest.raises(Exception) as info:
    fn()
  return info.type, str(info.value)


def test_tracer_bool_error_provenance():
  def g(x):
    if x > 0:
      return x
    return -x
  typ, msg = _message(lambda: api.jit(g)(1.))
  assert typ is errors.TracerBoolConversionError
  line = g.__code__.co_firstlineno
  assert (f"The error occurred while tracing the function g at {__file__}:{line} for jit. "
          "This concrete value was not available in Python because it depends on the value "
          "of the argument x.") in msg
  typ, msg = _message(lambda: api.make_jaxpr(lambda x: bool(x))(1.))
  assert typ is errors.TracerBoolConversionError and "of the argument x." in msg


@pytest.mark.parametrize("fn,args,expected", [
    (lambda x, y: bool(x + y), (1., 2.), "depends on the values of the arguments x and y."),
    (lambda x, y, z: bool(x + y + z), (1., 2., 3.),
     "depends on the values of the arguments x, y, and z."),
    (lambda *args: bool(args[0]), (1., 2.), "depends on the value of the argument args[0]."),
    (lambda d: bool(d["a"]), ({"a": 1.},), "depends on the value of the argument d['a']."),
])
def test_tracer_error_argument_names(fn, args, expected):
  typ, msg = _message(lambda: api.jit(fn)(*args))
  assert typ is errors.TracerBoolConversionError
  assert expected in msg


def test_tracer_error_kwargs_and_nested_jit():
  _, msg = _message(lambda: api.jit(lambda x, **kw: bool(kw["a"]))(1., a=2.))
  assert "of the argument kw['a']." in msg
  _, msg = _message(lambda: api.jit(lambda x: api.jit(lambda y: bool(y * 2))(x))(1.))
  assert "of the argument y." in msg


def test_tracer_error_from_operations():
  _, msg = _message(lambda: api.jit(lambda x: bool(jnp.zeros(3).sum() + 1))(1.))
  assert "This value became a tracer due to JAX operations on these lines:" in msg
  assert "  operation a:f32[3] = broadcast_in_dim 0.0:f32[]\n    from line " in msg
  assert __file__ in msg


def test_concretization_errors():
  typ, msg = _message(lambda: api.jit(lambda x, y: int(y))(1., 2.))
  assert typ is errors.ConcretizationTypeError
  assert ("The problem arose with the `int` function. If trying to convert the data type "
          "of a value, try using `x.astype(int)` or `jnp.array(x, int)` instead.\n"
          "The error occurred while tracing the function <lambda>") in msg
  assert "of the argument y." in msg
  typ, msg = _message(lambda: api.jit(lambda x: x.item())(jnp.ones(3)))
  assert typ is errors.ConcretizationTypeError
  assert "This occurred in the item() method of jax.Array\nThe error occurred" in msg
  typ, msg = _message(lambda: api.jit(lambda x: [1, 2][x])(1))
  assert typ is errors.TracerIntegerConversionError and "of the argument x." in msg
  typ, _ = _message(lambda: api.jit(lambda x: np.asarray(x))(jnp.ones(3)))
  assert typ is errors.TracerArrayConversionError


def test_escaped_tracer():
  leaked = []

  @api.jit
  def f(x):
    leaked.append(x)
    return x
  f(1.)
  with pytest.raises(errors.UnexpectedTracerError, match="Encountered an unexpected tracer"):
    leaked[0] + 1
  with pytest.raises(errors.UnexpectedTracerError):
    api.jit(lambda y: y + leaked[0])(1.)


# --- evaluating jaxprs, named scopes, custom derivative printing -------------------------------
def test_eval_jaxpr_keeps_literal_weak_types():
  j = api.make_jaxpr(lambda x: x * 2.0)(1.0)
  lit = j.jaxpr.eqns[0].invars[1]
  assert isinstance(lit, core.Literal) and lit.aval.weak_type
  out, = core.eval_jaxpr(j.jaxpr, j.consts, 3.0)
  assert out.weak_type and float(out) == 6.0
  out, = core.eval_jaxpr(j.jaxpr, j.consts, jnp.float32(3.0))
  assert out.dtype == np.float32 and not out.weak_type


def test_named_call_and_named_scope():
  from pyjax._src.api import current_name_stack
  seen = []

  def f(x):
    seen.append(current_name_stack())
    return x + 1
  g = pyjax.named_call(f, name="foo")
  with pyjax.named_scope("outer"):
    j = api.make_jaxpr(g)(1.0)
  assert seen == ["outer/foo"] and current_name_stack() == ""
  assert str(j) == "{ lambda ; a:f32[]. let b:f32[] = add a 1.0:f32[] in (b,) }"
  assert g.__name__ == "f" and pyjax.named_call(f)(1.0) == 2.0
  with pytest.raises(TypeError, match="named_scope name argument must be a string."):
    with pyjax.named_scope(1):
      pass


def test_named_call_jaxpr_matches_jax():
  jax = pytest.importorskip("jax")

  def prog(jax):
    def g(x):
      with jax.named_scope("scope"):
        return x * 2
    return str(jax.make_jaxpr(jax.named_call(g, name="foo"))(1.0))
  assert prog(pyjax) == prog(jax)


def test_custom_derivative_params_print_like_jax():
  jax = pytest.importorskip("jax")

  def prog(jax, jnp):
    @jax.custom_jvp
    def f(x):
      return jnp.sin(x)

    @f.defjvp
    def f_jvp(p, t):
      return f(p[0]), t[0] * jnp.cos(p[0])

    @jax.custom_vjp
    def g(x):
      return jnp.sin(x)

    def g_fwd(x):
      return g(x), x

    def g_bwd(r, ct):
      return (ct * jnp.cos(r),)
    g.defvjp(g_fwd, g_bwd)
    h = lambda x: f(x) + g(x)  # noqa: E731
    return [str(jax.make_jaxpr(h)(1.0)), str(jax.make_jaxpr(jax.grad(h))(1.0)),
            str(jax.make_jaxpr(jax.jit(jax.grad(h)))(1.0))]
  import jax.numpy as jjnp
  for a, b in zip(prog(pyjax, jnp), prog(jax, jjnp)):
    assert a == b


_AXIS_ENV_CASES = {
    "psum": (lambda m: lambda x: m.lax.psum(x, "i"), [("i", 4)], 1.0),
    "axis_index": (lambda m: lambda x: m.lax.axis_index("i") + x, [("i", 4)], 1.0),
    "pmean two names": (lambda m: lambda x: m.lax.pmean(x, ("i", "j")) * m.lax.axis_size("j"),
                        [("i", 4), ("j", 3)], np.ones(2, np.float32)),
    "all_gather": (lambda m: lambda x: m.lax.all_gather(x, "i"), [("i", 4)],
                   np.ones(2, np.float32)),
}


@pytest.mark.parametrize("case", sorted(_AXIS_ENV_CASES))
def test_make_jaxpr_axis_env_matches_jax(case):
  jax = pytest.importorskip("jax")
  make, env, x = _AXIS_ENV_CASES[case]
  assert (str(pyjax.make_jaxpr(make(pyjax), axis_env=env)(x)) ==
          str(jax.make_jaxpr(make(jax), axis_env=env)(x)))


def test_make_jaxpr_axis_env_unbound_name_and_scope():
  f = lambda x: lax.psum(x, "k")  # noqa: E731
  with pytest.raises(NameError, match="Found an unbound axis name: k. To fix this, please call "
                     "psum under `jax.shard_map`."):
    pyjax.make_jaxpr(f, axis_env=[("i", 4)])(1.0)
  pyjax.make_jaxpr(lambda x: lax.psum(x, "i"), axis_env=[("i", 4)])(1.0)
  with pytest.raises(NameError):   # the names are bound only while make_jaxpr traces
    pyjax.make_jaxpr(lambda x: lax.psum(x, "i"))(1.0)


@pytest.mark.parametrize("value", ["abc", [1, 2], None, 1, True, 2.5, np.ones((2, 3), np.int8),
                                   np.float32(1)], ids=repr)
def test_typeof_matches_jax(value):
  jax = pytest.importorskip("jax")
  try:
    ref = jax.typeof(value)
  except TypeError as e:
    with pytest.raises(TypeError) as ours:
      pyjax.typeof(value)
    assert str(ours.value) == str(e)
    return
  ours = pyjax.typeof(value)
  assert (str(ours), repr(ours)) == (str(ref), repr(ref))


def test_tracer_reprs_match_jax():
  jax = pytest.importorskip("jax")

  def reprs(m):
    seen = []
    rec = lambda x: seen.append(repr(x)) or x  # noqa: E731
    m.grad(rec)(1.0)
    m.vmap(rec)(np.ones(3, np.float32))
    m.jvp(rec, (1.0,), (1.0,))
    m.make_jaxpr(rec)(1.0)
    m.jit(rec)(np.ones(3, np.float32))
    m.vmap(m.grad(rec))(np.ones(2, np.float32))
    return seen
  assert reprs(pyjax) == reprs(jax)
