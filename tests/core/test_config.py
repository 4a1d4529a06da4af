"""Config options, their context managers, debug_nans/infs, transfer guards (JAX 0.10)."""
import logging

import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax._src import config_names


def _jax():
  return pytest.importorskip("jax")


@pytest.fixture
def restore_config():
  saved = dict(pyjax.config.values)
  yield
  for k, v in saved.items():
    if pyjax.config.read(k) != v:
      pyjax.config.update(k, v)


# --- the option names -------------------------------------------------------------------------
def test_every_jax_option_exists_with_jax_default():
  jax = _jax()
  holders = jax.config._value_holders
  missing = sorted(set(holders) - set(pyjax.config.values))
  assert missing == []
  # set by the test setup (conftest / environment) for one library or the other; the
  # conftest points the JAX oracle at its persistent compilation cache
  env = {"jax_platforms", "jax_num_cpu_devices", "jax_compilation_cache_dir",
         "jax_enable_x64", "jax_persistent_cache_min_compile_time_secs",
         "jax_persistent_cache_min_entry_size_bytes"}
  for name, h in holders.items():
    if name in env:
      continue
    v = pyjax.config.read(name)
    assert v == h.value, name
    assert getattr(pyjax.config, name) == h.value


def test_unknown_option():
  with pytest.raises(AttributeError, match="Unrecognized config option: jax_no_such_option"):
    pyjax.config.update("jax_no_such_option", 1)
  with pytest.raises(AttributeError, match="Unrecognized config option"):
    pyjax.config.jax_no_such_option  # noqa: B018


@pytest.mark.parametrize("name,value", [
    ("jax_numpy_rank_promotion", "bad"),
    ("jax_default_matmul_precision", "bad"),
    ("jax_transfer_guard", "bad"),
    ("jax_compilation_cache_max_size", "x"),
    ("jax_traceback_filtering", "xx"),
    ("jax_legacy_prng_key", "xx"),
    ("jax_numpy_dtype_promotion", "xx"),
    ("jax_explicit_x64_dtypes", "xx"),
    ("jax_exec_time_optimization_effort", "x"),
    ("jax_compilation_cache_dir", 3),
])
def test_invalid_values_raise_as_jax(name, value, restore_config):
  jax = _jax()
  with pytest.raises(Exception) as ej:
    jax.config.update(name, value)
  with pytest.raises(type(ej.value)) as ep:
    pyjax.config.update(name, value)
  assert str(ep.value) == str(ej.value)


def test_enum_class_options_hold_str_enums(restore_config):
  pyjax.config.update("jax_numpy_dtype_promotion", "strict")
  v = pyjax.config.jax_numpy_dtype_promotion
  assert v == "strict" and v.name == "STRICT"
  assert pyjax.config.jax_explicit_x64_dtypes == config_names.ExplicitX64Mode.WARN


def test_unhonoured_values_raise_not_implemented(restore_config):
  for name, (default, _, policy, _) in config_names.OPTIONS.items():
    if policy != config_names.DEFAULT:
      continue
    if isinstance(default, bool):
      with pytest.raises(NotImplementedError, match=name):
        pyjax.config.update(name, not default)
      assert pyjax.config.read(name) == default
      pyjax.config.update(name, default)   # the default itself is accepted
  with pytest.raises(NotImplementedError, match="jax_platform_name='tpu'"):
    pyjax.config.update("jax_platform_name", "tpu")
  with pytest.raises(NotImplementedError, match="jax_explicit_x64_dtypes"):
    pyjax.config.update("jax_explicit_x64_dtypes", "allow")


def test_free_options_accept_valid_values(restore_config):
  pyjax.config.update("jax_compiler_enable_remat_pass", False)
  assert pyjax.config.jax_compiler_enable_remat_pass is False
  pyjax.config.update("jax_memory_fitting_level", "O1")
  assert pyjax.config.jax_memory_fitting_level == "O1"
  pyjax.config.update("jax_traceback_filtering", "off")


# --- context managers ---------------------------------------------------------------------------
def test_enable_x64_context_and_decorator():
  assert jnp.ones(2).dtype == np.float32
  with pyjax.enable_x64():
    assert pyjax.config.jax_enable_x64 is True
    assert jnp.ones(2).dtype == np.float64
    with pyjax.enable_x64(False):
      assert jnp.ones(2).dtype == np.float32
    assert pyjax.enable_x64.value is True
  assert pyjax.config.jax_enable_x64 is False

  @pyjax.enable_x64(True)
  def f():
    return jnp.arange(3).dtype
  assert f() == np.int64
  assert jnp.arange(3).dtype == np.int32


def test_state_objects_as_jax():
  jax = _jax()
  for name in ["enable_checks", "enable_x64", "debug_key_reuse", "check_tracer_leaks",
               "debug_nans", "debug_infs", "log_compiles",
               "explain_cache_misses", "default_matmul_precision", "numpy_rank_promotion",
               "numpy_dtype_promotion", "default_prng_impl", "threefry_partitionable",
               "transfer_guard_host_to_device", "transfer_guard_device_to_host",
               "transfer_guard_device_to_device", "legacy_prng_key", "softmax_custom_jvp",
               "no_tracing", "no_execution", "thread_guard", "auto_pcast"]:
    j, p = getattr(jax, name), getattr(pyjax, name)
    assert p.value == j.value, name
    assert p.__name__ == j.__name__
  with pytest.raises(TypeError, match="bool\\(\\) not supported"):
    bool(pyjax.debug_nans)
  with pytest.raises(TypeError) as ej:
    jax.numpy_rank_promotion()
  with pytest.raises(TypeError) as ep:
    pyjax.numpy_rank_promotion()
  assert str(ep.value) == str(ej.value)


def test_rank_promotion_context():
  x, y = jnp.ones(3), jnp.ones((2, 3))
  with pyjax.numpy_rank_promotion("raise"):
    with pytest.raises(ValueError, match="jax_numpy_rank_promotion='raise'"):
      x + y
  assert (x + y).shape == (2, 3)


def test_default_matmul_precision_context():
  a = jnp.ones((2, 2))
  with pyjax.default_matmul_precision("highest"):
    assert pyjax.config.jax_default_matmul_precision == "highest"
    s = str(pyjax.make_jaxpr(jnp.dot)(a, a))
  assert "HIGHEST" in s
  assert pyjax.config.jax_default_matmul_precision is None


def test_dtype_promotion_context():
  with pyjax.numpy_dtype_promotion("strict"):
    with pytest.raises(Exception, match="strict"):
      jnp.ones(2, jnp.float32) + jnp.ones(2, jnp.int32)
  assert (jnp.ones(2, jnp.float32) + jnp.ones(2, jnp.int32)).dtype == np.float32


def test_unhonoured_context_manager_raises():
  with pytest.raises(NotImplementedError, match="jax_check_static_indices"):
    pyjax.config.update("jax_check_static_indices", True)
  assert pyjax.config.jax_check_static_indices is False
  with pytest.raises(NotImplementedError, match="jax_enable_custom_prng"):
    with pyjax.enable_custom_prng(True):
      pass
  assert pyjax.config.jax_enable_custom_prng is False


def test_enable_checks_type_checks_traced_jaxprs(monkeypatch):
  from pyjax._src import extend_core
  seen = []
  real = extend_core.check_jaxpr
  monkeypatch.setattr(extend_core, "check_jaxpr", lambda j: (seen.append(j), real(j))[1])
  f = lambda x: jnp.sin(x) * 2  # noqa: E731
  with pyjax.enable_checks(True):
    assert float(pyjax.jit(f)(1.0)) == pytest.approx(2 * np.sin(1.0))
    g = pyjax.jit(lambda x: jnp.cos(x) * 3)
    assert float(pyjax.grad(g)(1.0)) == pytest.approx(-3 * np.sin(1.0))
  assert len(seen) >= 2
  n = len(seen)
  pyjax.jit(lambda x: x + 1)(1.0)
  assert len(seen) == n


def test_explicit_x64_dtypes_error(restore_config):
  jax = _jax()
  pyjax.config.update("jax_explicit_x64_dtypes", "error")
  jax.config.update("jax_explicit_x64_dtypes", "error")
  try:
    with pytest.raises(ValueError) as ej:
      jax.numpy.zeros(3, "float64")
  finally:
    jax.config.update("jax_explicit_x64_dtypes", "warn")
  with pytest.raises(ValueError) as ep:
    jnp.zeros(3, "float64")
  assert str(ep.value) == str(ej.value)


def test_logging_level_and_debug_log_modules(restore_config):
  pyjax.config.update("jax_logging_level", "INFO")
  assert logging.getLogger("pyjax").level == logging.INFO
  pyjax.config.update("jax_logging_level", "NOTSET")
  assert logging.getLogger("pyjax").level == logging.NOTSET
  pyjax.config.update("jax_debug_log_modules", "jax._src.dispatch")
  assert logging.getLogger("pyjax._src.dispatch").level == logging.DEBUG
  pyjax.config.update("jax_debug_log_modules", "")
  assert logging.getLogger("pyjax._src.dispatch").level == logging.NOTSET


# --- debug_nans / debug_infs -------------------------------------------------------------------
def _fpe(fn, *args):
  with pytest.raises(FloatingPointError) as e:
    fn(*args)
  return str(e.value)


def _both(jax, pj_fn, jax_fn, *args):
  return _fpe(pj_fn, *args), _fpe(jax_fn, *args)


@pytest.mark.parametrize("case", ["eager_log", "eager_div", "jit_log", "jit_exp_inf"])
def test_debug_nans_infs_match_jax(case, capsys):
  jax = _jax()
  flag = "jax_debug_infs" if "inf" in case else "jax_debug_nans"
  fns = {
      "eager_log": lambda m: (m.numpy.log, -1.0),
      "eager_div": lambda m: (m.numpy.divide, 0.0, 0.0),
      "jit_log": lambda m: (m.jit(lambda x: m.numpy.log(x) * 2), np.array([-1.0, 2.0], np.float32)),
      "jit_exp_inf": lambda m: (m.jit(lambda x: m.numpy.exp(x) + 1), 1000.0),
  }
  msgs = []
  for m in (pyjax, jax):
    m.config.update(flag, True)
    try:
      fn, *args = fns[case](m)
      msgs.append(_fpe(fn, *args))
    finally:
      m.config.update(flag, False)
  assert msgs[0] == msgs[1]
  out = capsys.readouterr().out
  if case.startswith("jit"):
    assert "Calling the de-optimized version." in out


def test_debug_nans_deoptimized_without_nan(capsys):
  jax = _jax()
  msgs = []
  for m in (pyjax, jax):
    with m.debug_nans(True):
      msgs.append(_fpe(m.jit(lambda x: x + 1), float("nan")))
  assert msgs[0] == msgs[1]
  assert "did not produce invalid values" in msgs[0]


def test_debug_nans_off_and_valid_values():
  f = pyjax.jit(lambda x: jnp.log(x))
  assert np.isnan(float(f(-1.0)))
  with pyjax.debug_nans(True):
    assert float(f(1.0)) == 0.0
    assert float(jnp.log(1.0)) == 0.0
    assert float(jnp.exp(1000.0)) == np.inf   # infs pass under debug_nans
    assert int(jnp.arange(3).sum()) == 3
  assert np.isnan(float(f(-1.0)))


# --- transfer guards ----------------------------------------------------------------------------
def _guard_outcomes(m, level):
  x = m.numpy.arange(3.0)
  cases = {
      "eager_np": lambda: m.numpy.add(x, np.ones(3, np.float32)),
      "eager_scalar": lambda: x + 1.0,
      "jit_np": lambda: m.jit(lambda a: a * 2)(np.ones(3, np.float32)),
      "jit_scalar": lambda: m.jit(lambda a: a * 2)(2.0),
      "device_put": lambda: m.device_put(np.ones(3)),
      "to_host": lambda: np.asarray(x),
      "float": lambda: float(x[1] if m is pyjax else x[1]),
      "on_device": lambda: m.numpy.sin(x),
  }
  out = {}
  with m.transfer_guard(level):
    for k, fn in cases.items():
      try:
        fn()
        out[k] = "ok"
      except Exception as e:  # noqa: BLE001
        out[k] = (type(e).__name__, str(e))
  return out


@pytest.mark.parametrize("level", ["allow", "disallow", "disallow_explicit", "log",
                                   "log_explicit"])
def test_transfer_guard_matches_jax(level):
  jax = _jax()
  p, j = _guard_outcomes(pyjax, level), _guard_outcomes(jax, level)
  # x[1] transfers the index in JAX (an int32 host value); pyjax indexes with no transfer
  p.pop("float")
  j.pop("float")
  assert p == j


def test_transfer_guard_log_message(caplog):
  with caplog.at_level(logging.WARNING, logger="pyjax._src.transfer_guard"):
    with pyjax.transfer_guard("log"):
      pyjax.jit(lambda a: a * 2)(np.ones(3, np.float32))
  assert ("host-to-device transfer: aval=ShapedArray(float32[3]), "
          "dst_sharding=SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)"
          ) in caplog.text


def test_transfer_guard_per_direction_overrides():
  with pyjax.transfer_guard("disallow"):
    with pyjax.transfer_guard_host_to_device("allow"):
      assert float(pyjax.jit(lambda a: a * 2)(2.0)) == 4.0
    with pytest.raises(pyjax.errors.JaxRuntimeError, match="Disallowed host-to-device"):
      pyjax.jit(lambda a: a * 2)(2.0)
  assert float(pyjax.jit(lambda a: a * 2)(2.0)) == 4.0
  with pytest.raises(ValueError, match="new enum value must be None or in"):
    pyjax.transfer_guard("bogus")


# --- check_tracer_leaks -------------------------------------------------------------------------
@pytest.mark.parametrize("transform", ["jit", "vmap", "make_jaxpr", "grad"])
def test_checking_leaks_matches_jax(transform):
  jax = _jax()
  outs = []
  for m in (pyjax, jax):
    leak = []

    def f(x):
      leak.append(x)
      return x * 2

    def g(x):
      return m.numpy.sin(x) * 2
    tr = getattr(m, transform)
    x = m.numpy.ones(()) if transform == "grad" else m.numpy.ones(3)
    res = []
    with m.checking_leaks():
      for fn in (f, g):
        leak.clear()
        try:
          tr(fn)(x)
          res.append("ok")
        except Exception as e:  # noqa: BLE001
          lines = str(e).split("\n")
          res.append((type(e).__name__, lines[0], lines[2]))
    outs.append(res)
  assert outs[0] == outs[1]
  assert pyjax.config.jax_check_tracer_leaks is False


def test_no_leak_check_when_off():
  leak = []
  pyjax.jit(lambda x: (leak.append(x), x * 2)[1])(jnp.ones(3))
  assert len(leak) == 1


# --- no_tracing / no_execution / legacy_prng_key / random_seed_offset --------------------------
def _misc_outcomes(m):
  import warnings
  out = {}

  def run(name, fn):
    try:
      with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = fn()
      out[name] = ("ok", np.asarray(r).tolist() if r is not None else None,
                   [str(x.message) for x in w if "Legacy" in str(x.message)])
    except Exception as e:  # noqa: BLE001
      out[name] = (type(e).__name__, str(e).split(" at ")[0])
  f = m.jit(lambda x: x * 2)
  f(1.0)
  with m.no_tracing(True):
    run("cached", lambda: f(2.0))
    run("retrace", lambda: f(np.float32(1.0).reshape(1)))
  with m.no_execution(True):
    run("execute", lambda: f(2.0))
    run("make_jaxpr", lambda: str(m.make_jaxpr(m.numpy.sin)(1.0)) and None)
  with m.legacy_prng_key("warn"):
    run("legacy_warn", lambda: m.random.uniform(m.random.PRNGKey(0)))
  with m.legacy_prng_key("error"):
    run("legacy_error", lambda: m.random.split(m.random.PRNGKey(0)))
    run("typed_ok", lambda: m.random.uniform(m.random.key(0)))
  m.config.update("jax_random_seed_offset", 3)
  try:
    run("offset", lambda: m.random.key_data(m.random.key(0)))
    run("offset_jit", lambda: m.random.key_data(m.jit(m.random.key)(0)))
    run("offset_raw", lambda: m.random.PRNGKey(1))
  finally:
    m.config.update("jax_random_seed_offset", 0)
  run("no_offset", lambda: m.random.key_data(m.jit(m.random.key)(0)))
  return out


def test_no_tracing_execution_legacy_keys_seed_offset_match_jax():
  jax = _jax()
  p, j = _misc_outcomes(pyjax), _misc_outcomes(jax)
  # JAX also traces the conversion of the new argument first; the error is the same kind
  assert p.pop("retrace")[0] == j.pop("retrace")[0] == "RuntimeError"
  assert p == j


def test_values_property_and_command_line_flags(monkeypatch, restore_config):
  jax = _jax()
  assert set(pyjax.config.values) >= set(jax.config.values)
  assert pyjax.config.x64_enabled is False
  monkeypatch.setattr("sys.argv", ["prog", "--jax_numpy_rank_promotion=warn", "--other=1",
                                   "--jax_debug_infs", "--jax_compilation_cache_max_size=-1"])
  pyjax.config.parse_flags_with_absl()
  assert pyjax.config.jax_numpy_rank_promotion == "warn"
  assert pyjax.config.jax_debug_infs is True


def test_explain_cache_miss_names_the_debug_flag(caplog):
  f = pyjax.jit(lambda x: x + 1)
  f(1.0)
  with caplog.at_level(logging.WARNING):
    with pyjax.explain_cache_misses(True), pyjax.debug_key_reuse(True):
      f(1.0)
  assert "* jax_debug_key_reuse differs: now True and before False" in caplog.text
  assert "pyjax_trace_context" not in caplog.text


@pytest.mark.parametrize("case", ["grad_jit", "jvp_jit", "vmap_jit", "jit_jit", "scan"])
def test_debug_nans_through_transformations_match_jax(case, capsys):
  jax = _jax()
  msgs = []
  for m in (pyjax, jax):
    n = m.numpy
    fns = {
        "grad_jit": lambda: m.grad(m.jit(lambda x: n.log(x)))(-1.0),
        "jvp_jit": lambda: m.jvp(m.jit(lambda x: n.log(x)), (-1.0,), (1.0,)),
        "vmap_jit": lambda: m.vmap(m.jit(lambda x: n.log(x)))(n.array([1.0, -1.0])),
        "jit_jit": lambda: m.jit(lambda x: m.jit(n.log)(x) + 1)(-1.0),
        "scan": lambda: m.lax.scan(lambda c, x: (c + n.log(x), None), 0.0,
                                   n.array([1.0, -1.0])),
    }
    with m.debug_nans(True):
      msgs.append(_fpe(fns[case]))
  assert msgs[0] == msgs[1]
