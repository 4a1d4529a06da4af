"""Devices, device_put/device_get, committed vs uncommitted placement."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp


def test_default_devices():
  ds = pyjax.devices()
  assert len(ds) >= 1
  d = ds[0]
  assert repr(d) == "CpuDevice(id=0)"
  assert str(d) == "cpu:0"
  assert (d.platform, d.device_kind, d.process_index, d.id) == ("cpu", "cpu", 0, 0)
  assert pyjax.default_backend() == "cpu"
  assert pyjax.device_count() == len(ds) == pyjax.local_device_count()
  assert pyjax.local_devices() == ds
  assert pyjax.process_index() == 0 and pyjax.process_count() == 1
  assert pyjax.devices("cpu") == ds


def test_device_put_commits_and_device_get():
  d = pyjax.devices()[0]
  x = pyjax.device_put(np.arange(3, dtype=np.float32), d)
  assert x.committed and x.device is d and x.devices() == {d}
  y = pyjax.device_put(np.arange(3))
  assert not y.committed
  got = pyjax.device_get({"a": x, "b": 3})
  assert isinstance(got["a"], np.ndarray) and got["b"] == 3
  assert repr(x.sharding) == "SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)"
  assert not jnp.array(1.0).committed
  assert (x + 1).committed


def test_device_put_pytree():
  d = pyjax.devices()[0]
  out = pyjax.device_put({"w": np.ones(2), "b": [1.0, np.zeros(1)]}, d)
  assert all(leaf.committed for leaf in pyjax.tree_util.tree_leaves(out))


def test_default_device_context():
  d = pyjax.devices()[0]
  with pyjax.default_device(d):
    assert jnp.array(1.0).device is d


MULTI = textwrap.dedent("""
    import numpy as np, pyjax, pyjax.numpy as jnp
    pyjax.config.update("jax_num_cpu_devices", 2)
    d0, d1 = pyjax.devices()
    assert repr(pyjax.devices()) == "[CpuDevice(id=0), CpuDevice(id=1)]"
    x = jnp.asarray(np.arange(3, dtype=np.int32))
    a, b = pyjax.device_put(x, d0), pyjax.device_put(x, d1)
    y = b + 1
    assert y.devices() == {d1} and y.committed
    z = b + x                      # uncommitted data follows committed data
    assert z.devices() == {d1}
    try:
        a + b
    except ValueError as e:
        msg = str(e)
        assert msg.startswith("Received incompatible devices for jitted computation. Got argument x of add with shape int32[3] and with device ids [0] on platform CPU and argument y of add with shape int32[3] and with device ids [1] on platform CPU"), msg
    else:
        raise SystemExit("no error")
    with pyjax.default_device(d1):
        assert jnp.array(1.0).device is d1
    print("ok")
""")


def test_multiple_cpu_devices_in_subprocess():
  env = dict(os.environ)
  env.pop("JAX_NUM_CPU_DEVICES", None)
  r = subprocess.run([sys.executable, "-c", MULTI], capture_output=True, text=True, env=env, timeout=120)
  assert r.returncode == 0, r.stderr
  assert r.stdout.strip() == "ok"


def test_env_num_devices_in_subprocess():
  env = dict(os.environ, JAX_NUM_CPU_DEVICES="3")
  r = subprocess.run([sys.executable, "-c", "import pyjax; print(pyjax.device_count())"],
                     capture_output=True, text=True, env=env, timeout=120)
  assert r.returncode == 0, r.stderr
  assert r.stdout.strip() == "3"


def test_unknown_platform_errors_in_subprocess():
  env = dict(os.environ, JAX_PLATFORMS="tpu")
  r = subprocess.run([sys.executable, "-c", "import pyjax; pyjax.devices()"],
                     capture_output=True, text=True, env=env, timeout=120)
  assert r.returncode != 0 and "RuntimeError" in r.stderr


_TRACED_PUTS = {
    "pytree": (lambda m: lambda x, y: m.device_put((x, y)), (1.0, 2)),
    "grad": (lambda m: lambda x: m.grad(lambda x: m.device_put(x) * x)(x), (1.0,)),
    "vmap": (lambda m: m.vmap(lambda x: m.device_put(x)), (np.ones(3, np.float32),)),
    "device, no alias": (lambda m: lambda x: m.device_put(x, m.devices()[0], may_alias=False),
                         (1.0,)),
    "donate": (lambda m: lambda x: m.device_put(x, donate=True), (1.0,)),
}


@pytest.mark.parametrize("case", sorted(_TRACED_PUTS))
def test_device_put_of_tracers_is_an_equation_like_jax(case):
  jax = pytest.importorskip("jax")
  make, args = _TRACED_PUTS[case]
  assert str(pyjax.make_jaxpr(make(pyjax))(*args)) == str(jax.make_jaxpr(make(jax))(*args))


def test_device_put_under_transformations_values():
  f = lambda x: pyjax.device_put(x) * x  # noqa: E731
  assert float(pyjax.grad(f)(3.0)) == 6.0
  assert float(pyjax.jit(f)(np.float32(2))) == 4.0
  np.testing.assert_array_equal(pyjax.vmap(lambda x: pyjax.device_put(x) + 1)(np.ones(2)),
                                [2.0, 2.0])
  y, t = pyjax.jvp(lambda x: pyjax.device_put({"a": x})["a"] * 2, (1.0,), (1.0,))
  assert (float(y), float(t)) == (2.0, 2.0)
