"""jax.experimental.hijax on pyjax: a user hi type and HiPrimitives (eager, jvp, staged
under jit/make_jaxpr), Box, aval_method forwarding, effect type sets; compared with
real JAX where JAX's behaviour is defined for the case."""
import dataclasses

import numpy as np
import pytest

import pyjax
import pyjax.extend.core
import pyjax.numpy as jnp
from pyjax.experimental import hijax as hjx
from pyjax._src import effects
from pyjax._src.hijax import Box, BoxTy


# --- a user immutable hi type: a pair of arrays with a "scale" primitive ------------------
class Pair:
  def __init__(self, a, b):
    self.a, self.b = a, b


@dataclasses.dataclass(frozen=True)
class PairTy(hjx.HiType):
  shape: tuple

  def __hash__(self):
    return hash(("PairTy", self.shape))

  def __eq__(self, other):
    return isinstance(other, PairTy) and other.shape == self.shape

  def to_tangent_aval(self):
    return self

  def total(self):   # reachable from tracers of Pair values
    raise AssertionError("replaced below by an aval_method")


def _pair_total(p):
  return pair_total_p.bind(p)


PairTy.total = hjx.aval_method(_pair_total)
hjx.register_hitype(Pair, lambda p: PairTy(tuple(np.shape(p.a))))


class PairTotal(hjx.HiPrimitive):
  def abstract_eval(self, ty):
    return pyjax.core.ShapedArray(ty.shape, np.float32), set()

  def to_lojax(self, p):
    return p.a + p.b

  def jvp(self, primals, tangents):
    (p,), (t,) = primals, tangents
    return pair_total_p.bind(p), pair_total_p.bind(t)


pair_total_p = PairTotal("pair_total")


def test_register_hitype_typeof_and_eager_bind():
  p = Pair(jnp.ones(3), jnp.arange(3.0))
  assert pyjax.typeof(p) == PairTy((3,))
  np.testing.assert_allclose(pair_total_p.bind(p), [1.0, 2.0, 3.0])
  assert pair_total_p in pyjax.interpreters.ad.primitive_jvps


def test_hi_primitive_jvp_and_staging():
  p = Pair(jnp.ones(3), jnp.arange(3.0))
  t = Pair(jnp.full(3, 2.0), jnp.zeros(3))
  rule = pyjax.interpreters.ad.primitive_jvps[pair_total_p]
  out, tan = rule((p,), (t,))
  np.testing.assert_allclose(out, [1.0, 2.0, 3.0])
  np.testing.assert_allclose(tan, [2.0, 2.0, 2.0])
  # staged: lowered as bound, the jaxpr holds the lo operation; p's arrays are constants
  f = lambda x: pair_total_p.bind(p) * x
  np.testing.assert_allclose(pyjax.jit(f)(2.0), [2.0, 4.0, 6.0])
  text = str(pyjax.make_jaxpr(f)(2.0))
  assert "add" in text and "pair_total" not in text


def test_box_eager_get_set_matches_jax():
  b = Box(jnp.arange(3.0))
  np.testing.assert_allclose(b.get(), [0.0, 1.0, 2.0])
  b.set({"x": jnp.ones(2), "y": 3})
  assert set(b.get()) == {"x", "y"}
  assert isinstance(pyjax.typeof(b), BoxTy) and repr(pyjax.typeof(b)) == "BoxTy()"
  assert isinstance(b, Box)
  jax = pytest.importorskip("jax")
  from jax._src.hijax import Box as JBox
  jb = JBox(jax.numpy.arange(3.0))
  assert repr(jax.typeof(jb)) == repr(pyjax.typeof(Box(jnp.arange(3.0))))


def test_box_created_inside_jit_is_lowered():
  def f(x):
    bb = Box(x)
    bb.set(bb.get() * 3 + 1)
    return bb.get()
  np.testing.assert_allclose(pyjax.jit(f)(jnp.float32(2.0)), 7.0)
  assert str(pyjax.make_jaxpr(f)(2.0)).count("mul") == 1


def test_mutable_box_from_outside_is_threaded_through_jit_like_jax():
  def run(jax, jnp, Box):
    b = Box(jnp.arange(3.0))

    @jax.jit
    def f(x):
      b.set(b.get() + x)
      return x * 2
    out = [np.asarray(f(jnp.ones(3))), np.asarray(b.get())]
    out += [np.asarray(f(jnp.ones(3))), np.asarray(b.get())]
    b.set(jnp.zeros(3))   # changed between calls: the program reads the current contents
    g = jax.jit(lambda x: b.get() * x)
    out += [np.asarray(f(jnp.ones(3))), np.asarray(b.get()), np.asarray(g(2.0))]
    b.set(jnp.ones(3))
    out.append(np.asarray(g(2.0)))
    return out
  got = run(pyjax, jnp, Box)
  np.testing.assert_allclose(got[1], [1, 2, 3])
  np.testing.assert_allclose(got[3], [2, 3, 4])
  np.testing.assert_allclose(got[7], [2, 2, 2])
  jax = pytest.importorskip("jax")
  from jax._src.hijax import Box as JBox
  want = run(jax, jax.numpy, JBox)
  for g, w in zip(got, want):
    np.testing.assert_allclose(g, w)


def test_mutable_box_changing_type_inside_jit_raises():
  b = Box(jnp.arange(3.0))
  with pytest.raises(TypeError, match="changed the type"):
    pyjax.jit(lambda x: b.set((x, x)))(1.0)
  np.testing.assert_allclose(b.get(), [0.0, 1.0, 2.0])


def test_immutable_hi_value_from_outside_is_read_under_jit():
  p = Pair(jnp.ones(2), jnp.full(2, 2.0))
  np.testing.assert_allclose(pyjax.jit(lambda x: pair_total_p.bind(p) + x)(1.0), [4.0, 4.0])


def test_box_set_under_grad_raises_jax_message():
  def g(x):
    bb = Box(x)
    return bb.get()
  with pytest.raises(Exception, match="can't differentiate Box.set operation"):
    pyjax.grad(g)(1.0)


def test_cur_qdd_and_box_type_state():
  b = Box((jnp.ones(2), jnp.int32(3)))
  st = pyjax.experimental.cur_qdd(b)
  assert [a.str_short() for a in st.leaf_avals] == ["float32[2]", "int32[]"]
  assert st.treedef == pyjax.tree_util.tree_structure((1, 2))


def test_effect_type_sets():
  class MyEffect(pyjax.extend.core.Effect):
    pass
  s = effects.EffectTypeSet()
  e = MyEffect()
  assert not s.contains(e)
  s.add_type(MyEffect)
  assert s.contains(e) and s.filter_not_in([e]) == [] and s.filter_in([e]) == [e]
  with pytest.raises(TypeError):
    s.add_type(e)
  assert hjx.control_flow_allowed_effects.contains(pyjax._src.hijax.box_effect)


def test_hijax_module_names_match_jax():
  jax = pytest.importorskip("jax")
  import jax.experimental.hijax as jh
  missing = {n for n in dir(jh) if not n.startswith("_")} - set(dir(hjx))
  # pyjax omits JAX's newer VJPHiPrimitive API, sharding specs and TransformedRef
  assert missing <= {"VJPHiPrimitive", "HiPspec", "TransformedRef"}, missing


def test_mutable_box_in_control_flow_inside_jit_matches_jax():
  def run(jax, jnp, Box):
    b = Box(jnp.arange(3.0))

    @jax.jit
    def h(x):
      def body(i, c):
        b.set(b.get() + 1.0)
        return c + jax.lax.cond(c > 0, lambda: b.get().sum(), lambda: 0.0)
      return jax.lax.fori_loop(0, 3, body, x)
    return np.asarray(h(1.0)), np.asarray(b.get())
  got = run(pyjax, jnp, Box)
  np.testing.assert_allclose(got[1], [3.0, 4.0, 5.0])
  jax = pytest.importorskip("jax")
  from jax._src.hijax import Box as JBox
  for g, w in zip(got, run(jax, jax.numpy, JBox)):
    np.testing.assert_allclose(g, w)
