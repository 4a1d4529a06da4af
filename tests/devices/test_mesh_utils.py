"""jax.experimental.mesh_utils on 8 CPU devices compared with real JAX: device order and
shape of create_device_mesh / create_hybrid_device_mesh, and their errors.  Hybrid meshes
over several granules use stand-in device objects (both libraries read only a device's
id, platform, device_kind and slice_index / process_index)."""
import numpy as np
import pytest

from tests._multidevice import jax_oracle, needs8

import pyjax
from pyjax.experimental import mesh_utils

pytestmark = needs8

# Run by both libraries: `mu` is mesh_utils, `devs` the 8 devices.
_RUN = r"""
class FakeDev:
  def __init__(self, id, slice_index, platform='cpu'):
    self.id, self.slice_index, self.process_index = id, slice_index, slice_index % 2
    self.platform, self.device_kind = platform, platform
def run_cases(mu, devs):
  fakes = [FakeDev(i, s) for s in (1, 0, 2) for i in range(4 * s, 4 * s + 4)]
  gpus = [FakeDev(i, 0, 'gpu') for i in (3, 1, 2, 0)]
  cases = {
    'default': lambda: mu.create_device_mesh((2, 4)),
    'list_shape': lambda: mu.create_device_mesh([4, 2], devs[::-1]),
    'contiguous': lambda: mu.create_device_mesh((2, 4), devs[::-1], contiguous_submeshes=True),
    'float_shape': lambda: mu.create_device_mesh((2.0, 4)),
    'ndarray_shape': lambda: mu.create_device_mesh(np.array([8])),
    'scalar_mesh': lambda: mu.create_device_mesh((), devs[:1]),
    'gpu_sorted': lambda: mu.create_device_mesh((2, 2), gpus),
    'wrong_count': lambda: mu.create_device_mesh((3,)),
    'no_devices': lambda: mu.create_device_mesh((2, 4), []),
    'bad_shape': lambda: mu.create_device_mesh(('a', 2)),
    'int_shape': lambda: mu.create_device_mesh(8),
    'hybrid_process': lambda: mu.create_hybrid_device_mesh((4, 2), (1,), process_is_granule=True),
    'hybrid_no_slice': lambda: mu.create_hybrid_device_mesh((4, 2), (1, 1)),
    'hybrid_slices': lambda: mu.create_hybrid_device_mesh((2, 2), (3, 1), fakes),
    'hybrid_unsorted': lambda: mu.create_hybrid_device_mesh(
        (2, 2), (1, 3), fakes, should_sort_granules_by_key=False),
    'hybrid_short_dcn': lambda: mu.create_hybrid_device_mesh((2, 2), (3,), fakes),
    'hybrid_long_dcn': lambda: mu.create_hybrid_device_mesh((4,), (1, 3), fakes),
    'hybrid_processes': lambda: mu.create_hybrid_device_mesh(
        (6,), (2,), fakes, process_is_granule=True),
    'hybrid_wrong_granules': lambda: mu.create_hybrid_device_mesh((4,), (2,), fakes),
    'hybrid_wrong_size': lambda: mu.create_hybrid_device_mesh((2,), (3,), fakes),
  }
  res = {}
  for name, f in cases.items():
    try:
      r = f()
    except Exception as e:
      res[name] = ('error', type(e).__name__, str(e))
    else:
      res[name] = (type(r).__name__, str(r.dtype), r.shape, [d.id for d in r.flat])
  return res
"""


@pytest.fixture(scope="module")
def oracle():
  return jax_oracle(_RUN + "\nfrom jax.experimental import mesh_utils as mu\n"
                    "out['cases'] = run_cases(mu, jax.devices())\n")["cases"]


@pytest.fixture(scope="module")
def ours():
  ns = {"np": np}
  exec(_RUN, ns)
  return ns["run_cases"](mesh_utils, pyjax.devices())


def test_mesh_utils_match_jax(oracle, ours):
  assert ours.keys() == oracle.keys()
  for name in oracle:
    assert ours[name] == oracle[name], name


def test_mesh_holds_the_devices_and_feeds_a_mesh():
  devs = mesh_utils.create_device_mesh((4, 2))
  assert devs.dtype == object and devs[1, 0] is pyjax.devices()[2]
  mesh = pyjax.sharding.Mesh(devs, ("x", "y"))
  assert mesh.shape == {"x": 4, "y": 2}
  assert mesh_utils.create_hybrid_device_mesh((4, 2), (1, 1), process_is_granule=True).shape == (4, 2)
