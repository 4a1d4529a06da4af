"""jax.scipy.spatial.transform: ``Rotation`` (unit quaternions, scalar last, like SciPy)
and ``Slerp``.  Both are NamedTuples (pytrees); every operation maps over leading batch
dimensions of the quaternions, as JAX's vectorized versions do."""
from __future__ import annotations

import re
import typing

import numpy as np

from pyjax._src.numpy import linalg as jnp_linalg
import pyjax.numpy as jnp

__all__ = ["Rotation", "Slerp"]


def _check_seq(seq, n_allowed):
  if len(seq) not in n_allowed:
    if n_allowed == (3,):
      raise ValueError(f"Expected 3 axes, got {seq}.")
    raise ValueError("Expected axis specification to be a non-empty string of upto 3 "
                     f"characters, got {seq}")
  intrinsic = re.match(r"^[XYZ]{1,3}$", seq) is not None
  extrinsic = re.match(r"^[xyz]{1,3}$", seq) is not None
  if not (intrinsic or extrinsic):
    raise ValueError("Expected axes from `seq` to be from ['x', 'y', 'z'] or "
                     f"['X', 'Y', 'Z'], got {seq}")
  if any(seq[i] == seq[i + 1] for i in range(len(seq) - 1)):
    raise ValueError(f"Expected consecutive axes to be different, got {seq}")
  return intrinsic, extrinsic, ["xyz".index(c) for c in seq.lower()]


class Rotation(typing.NamedTuple):
  """A rotation (or a stack of rotations) stored as unit quaternions ``(x, y, z, w)``.

  Differs from JAX: ``Rotation.random`` raises NotImplementedError (as in JAX)."""
  quat: typing.Any

  @classmethod
  def concatenate(cls, rotations):
    """Stack several rotations into one."""
    return cls(jnp.concatenate([r.quat for r in rotations]))

  @classmethod
  def from_euler(cls, seq, angles, degrees=False):
    """From Euler angles about the axes ``seq`` (upper case: intrinsic, lower: extrinsic)."""
    intrinsic, _, axes = _check_seq(seq, (1, 2, 3))
    angles = jnp.atleast_1d(angles)
    if degrees:
      angles = jnp.deg2rad(angles)
    q = _elementary_quat(axes[0], angles[..., 0])
    for i in range(1, len(axes)):
      e = _elementary_quat(axes[i], angles[..., i])
      q = _compose(q, e) if intrinsic else _compose(e, q)
    return cls(q)

  @classmethod
  def from_matrix(cls, matrix):
    """From rotation matrices (shape ``(..., 3, 3)``)."""
    return cls(_from_matrix(jnp.asarray(matrix)))

  @classmethod
  def from_mrp(cls, mrp):
    """From modified Rodrigues parameters."""
    mrp = jnp.asarray(mrp)
    sq1 = jnp.sum(mrp * mrp, axis=-1, keepdims=True) + 1
    return cls(jnp.concatenate([2 * mrp[..., :3], 2 - sq1], axis=-1) / sq1)

  @classmethod
  def from_quat(cls, quat):
    """From (not necessarily unit) quaternions ``(x, y, z, w)``."""
    return cls(_normalize(jnp.asarray(quat)))

  @classmethod
  def from_rotvec(cls, rotvec, degrees=False):
    """From rotation vectors (axis times angle)."""
    rotvec = jnp.asarray(rotvec)
    if degrees:
      rotvec = jnp.deg2rad(rotvec)
    angle = _norm(rotvec)[..., None]
    a2 = angle * angle
    small = 0.5 - a2 / 48 + a2 * a2 / 3840
    large = jnp.sin(angle / 2) / angle
    scale = jnp.where(angle <= 1e-3, small, large)
    return cls(jnp.concatenate([scale * rotvec, jnp.cos(angle / 2)], axis=-1))

  @classmethod
  def identity(cls, num=None, dtype=float):
    """The identity rotation (``num`` must be None, as in JAX)."""
    assert num is None
    return cls(jnp.array([0., 0., 0., 1.], dtype=dtype))

  @classmethod
  def random(cls, random_key, num=None):
    """Not implemented (as in JAX)."""
    raise NotImplementedError()

  def __getitem__(self, indexer):
    if self.single:
      raise TypeError("Single rotation is not subscriptable.")
    return Rotation(self.quat[indexer])

  def __len__(self):
    if self.single:
      raise TypeError("Single rotation has no len().")
    return self.quat.shape[0]

  def __mul__(self, other):
    return Rotation.from_quat(_compose(self.quat, other.quat))

  def apply(self, vectors, inverse=False):
    """Rotate ``vectors`` (shape ``(..., 3)``), or apply the inverse rotation."""
    m = self.as_matrix()
    if inverse:
      m = jnp.swapaxes(m, -1, -2)
    return jnp.einsum("...ij,...j->...i", m, jnp.asarray(vectors))

  def as_euler(self, seq, degrees=False):
    """Euler angles about the three axes ``seq``."""
    _, extrinsic, axes = _check_seq(seq, (3,))
    return _as_euler(self.quat, axes, extrinsic, degrees)

  def as_matrix(self):
    """Rotation matrices ``(..., 3, 3)``."""
    q = self.quat
    x, y, z, w = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    x2, y2, z2, w2 = x * x, y * y, z * z, w * w
    xy, zw, xz, yw, yz, xw = x * y, z * w, x * z, y * w, y * z, x * w
    rows = [[+x2 - y2 - z2 + w2, 2 * (xy - zw), 2 * (xz + yw)],
            [2 * (xy + zw), -x2 + y2 - z2 + w2, 2 * (yz - xw)],
            [2 * (xz - yw), 2 * (yz + xw), -x2 - y2 + z2 + w2]]
    return jnp.stack([jnp.stack(r, axis=-1) for r in rows], axis=-2)

  def as_mrp(self):
    """Modified Rodrigues parameters."""
    q = self.quat
    sign = jnp.where(q[..., 3:] < 0, -1.0, 1.0)
    return sign * q[..., :3] / (1.0 + sign * q[..., 3:])

  def as_rotvec(self, degrees=False):
    """Rotation vectors (axis times angle, radians unless ``degrees``)."""
    q = self.quat
    q = jnp.where(q[..., 3:] < 0, -q, q)
    angle = 2.0 * jnp.arctan2(_norm(q[..., :3]), q[..., 3])[..., None]
    a2 = angle * angle
    small = 2 + a2 / 12 + 7 * a2 * a2 / 2880
    large = angle / jnp.sin(angle / 2)
    scale = jnp.where(angle <= 1e-3, small, large)
    if degrees:
      scale = jnp.rad2deg(scale)
    return scale * q[..., :3]

  def as_quat(self, canonical=False, scalar_first=False):
    """The quaternions (``canonical``: w >= 0 with SciPy's tie rules)."""
    q = _canonical(self.quat) if canonical else self.quat
    return jnp.roll(q, shift=1, axis=-1) if scalar_first else q

  def inv(self):
    """The inverse rotation."""
    return Rotation(self.quat * jnp.array([-1, -1, -1, 1], dtype=self.quat.dtype))

  def magnitude(self):
    """The rotation angle in radians."""
    q = self.quat
    return 2.0 * jnp.arctan2(_norm(q[..., :3]), jnp.abs(q[..., 3]))

  def mean(self, weights=None):
    """The (weighted) mean rotation (Markley's eigenvector method)."""
    w = (jnp.ones(self.quat.shape[0], dtype=self.quat.dtype) if weights is None
         else jnp.asarray(weights, dtype=self.quat.dtype))
    if w.ndim != 1:
      raise ValueError(f"Expected `weights` to be 1 dimensional, got shape {w.shape}.")
    if w.shape[0] != len(self):
      raise ValueError("Expected `weights` to have number of values equal to number of "
                       f"rotations, got {w.shape[0]} values and {len(self)} rotations.")
    K = jnp.dot(w[np.newaxis, :] * self.quat.T, self.quat)
    _, v = jnp_linalg.eigh(K)
    return Rotation(v[:, -1])

  @property
  def single(self):
    """Whether this is one rotation (not a stack)."""
    return self.quat.ndim == 1


class Slerp(typing.NamedTuple):
  """Spherical linear interpolation between rotations at given times (build with
  ``Slerp.init(times, rotations)``)."""
  times: typing.Any
  timedelta: typing.Any
  rotations: Rotation
  rotvecs: typing.Any

  @classmethod
  def init(cls, times, rotations):
    """The interpolator through ``rotations`` at the increasing ``times``."""
    if not isinstance(rotations, Rotation):
      raise TypeError("`rotations` must be a `Rotation` instance.")
    if rotations.single or len(rotations) == 1:
      raise ValueError("`rotations` must be a sequence of at least 2 rotations.")
    times = jnp.asarray(times, dtype=rotations.quat.dtype)
    if times.ndim != 1:
      raise ValueError("Expected times to be specified in a 1 dimensional array, got "
                       f"{times.ndim} dimensions.")
    if times.shape[0] != len(rotations):
      raise ValueError("Expected number of rotations to be equal to number of timestamps "
                       f"given, got {len(rotations)} rotations and {times.shape[0]} "
                       "timestamps.")
    start = Rotation(rotations.as_quat()[:-1])
    rotvecs = (start.inv() * Rotation(rotations.as_quat()[1:])).as_rotvec()
    return cls(times=times, timedelta=times[1:] - times[:-1], rotations=start,
               rotvecs=rotvecs)

  def __call__(self, times):
    t = jnp.asarray(times, dtype=self.times.dtype)
    if t.ndim > 1:
      raise ValueError("`times` must be at most 1-dimensional.")
    single = t.ndim == 0
    t = jnp.atleast_1d(t)
    ind = jnp.maximum(jnp.searchsorted(self.times, t) - 1, 0)
    alpha = (t - self.times[ind]) / self.timedelta[ind]
    out = self.rotations[ind] * Rotation.from_rotvec(self.rotvecs[ind] * alpha[:, None])
    return out[0] if single else out


# --- quaternion helpers (batched over leading dimensions) ---------------------------------
def _norm(v):
  return jnp.sqrt(jnp.sum(v * v, axis=-1))


def _normalize(q):
  return q / _norm(q)[..., None]


def _cross(a, b):
  return jnp.stack([a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1],
                    a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2],
                    a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]], axis=-1)


def _compose(p, q):
  """The Hamilton product ``p * q`` (scalar last)."""
  p, q = jnp.broadcast_arrays(p, q)
  c = _cross(p[..., :3], q[..., :3])
  pw, qw = p[..., 3], q[..., 3]
  return jnp.stack([pw * q[..., 0] + qw * p[..., 0] + c[..., 0],
                    pw * q[..., 1] + qw * p[..., 1] + c[..., 1],
                    pw * q[..., 2] + qw * p[..., 2] + c[..., 2],
                    pw * qw - p[..., 0] * q[..., 0] - p[..., 1] * q[..., 1]
                    - p[..., 2] * q[..., 2]], axis=-1)


def _elementary_quat(axis, angle):
  zero = jnp.zeros_like(angle)
  parts = [zero, zero, zero, jnp.cos(angle / 2.0)]
  parts[axis] = jnp.sin(angle / 2.0)
  return jnp.stack(parts, axis=-1)


def _canonical(q):
  neg, zero = q < 0, q == 0
  flip = (neg[..., 3] | (zero[..., 3] & neg[..., 0])
          | (zero[..., 3] & zero[..., 0] & neg[..., 1])
          | (zero[..., 3] & zero[..., 0] & zero[..., 1] & neg[..., 2]))
  return jnp.where(flip[..., None], -q, q)


def _from_matrix(m):
  """Shepperd's method: pick the largest of the diagonal and the trace for stability."""
  tr = m[..., 0, 0] + m[..., 1, 1] + m[..., 2, 2]
  decision = jnp.stack([m[..., 0, 0], m[..., 1, 1], m[..., 2, 2], tr], axis=-1)
  choice = jnp.argmax(decision, axis=-1)
  cands = []
  for i in range(3):
    j, k = (i + 1) % 3, (i + 2) % 3
    q = [None] * 4
    q[i] = 1 - tr + 2 * m[..., i, i]
    q[j] = m[..., j, i] + m[..., i, j]
    q[k] = m[..., k, i] + m[..., i, k]
    q[3] = m[..., k, j] - m[..., j, k]
    cands.append(jnp.stack(q, axis=-1))
  cands.append(jnp.stack([m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0],
                          m[..., 1, 0] - m[..., 0, 1], 1 + tr], axis=-1))
  q = cands[3]
  for i in range(3):
    q = jnp.where((choice == i)[..., None], cands[i], q)
  return _normalize(q)


def _as_euler(q, axes, extrinsic, degrees):
  """Euler angles from quaternions (Bernardes & Viollet's method, as SciPy)."""
  third = 2 if extrinsic else 0
  if not extrinsic:
    axes = axes[::-1]
  i, j, k = axes
  symmetric = i == k
  if symmetric:
    k = 3 - i - j
  sign = (i - j) * (j - k) * (k - i) // 2
  eps = 1e-7
  if symmetric:
    a, b, c, d = q[..., 3], q[..., i], q[..., j], q[..., k] * sign
  else:
    a = q[..., 3] - q[..., j]
    b = q[..., i] + q[..., k] * sign
    c = q[..., j] + q[..., 3]
    d = q[..., k] * sign - q[..., i]
  mid = 2 * jnp.arctan2(jnp.hypot(c, d), jnp.hypot(a, b))
  case = jnp.where(jnp.abs(mid - np.pi) <= eps, 2, 0)
  case = jnp.where(jnp.abs(mid) <= eps, 1, case)
  half_sum = jnp.arctan2(b, a)
  half_diff = jnp.arctan2(d, c)
  a0 = jnp.where(case == 1, 2 * half_sum, 2 * half_diff * (-1 if extrinsic else 1))
  a2 = jnp.zeros_like(mid)                # the degenerate cases leave the third angle 0
  if extrinsic:
    a0 = jnp.where(case == 0, half_sum - half_diff, a0)
    a2 = jnp.where(case == 0, half_sum + half_diff, a2)
  else:
    a2 = jnp.where(case == 0, half_sum - half_diff, a2)
    a0 = jnp.where(case == 0, half_sum + half_diff, a0)
  ang = [a0, mid, a2]
  if not symmetric:
    ang[third] = ang[third] * sign
    ang[1] = ang[1] - np.pi / 2
  out = jnp.stack(ang, axis=-1)
  out = (out + np.pi) % (2 * np.pi) - np.pi
  return jnp.rad2deg(out) if degrees else out
