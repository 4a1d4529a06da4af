"""Pure shape computations shared by primitive rules (``lax``) and backends, which must
not import ``lax``: the output size of XLA's ApproxTopK and the modes of a ragged dot."""
from __future__ import annotations

import math

import numpy as np

_TPU_LANE_TILING = 128     # ApproxTopK tiling for operands of rank >= 2
_TPU_CHUNK_TILING = 1024   # ... and of rank 1


def _log2_floor(v):
  return 0 if v == 0 else v.bit_length() - 1


def _log2_ceil(v):
  return 0 if v == 0 else (v - 1).bit_length()


def approx_top_k_output_size(input_size, rank, k, recall_target, aggregate_to_topk,
                             input_size_override=-1):
  """(output size of the reduction dimension, log2 of the reduction), as XLA computes it
  for ApproxTopK."""
  if aggregate_to_topk:
    return k, -1
  tiling = _TPU_CHUNK_TILING if rank == 1 else _TPU_LANE_TILING
  if input_size <= tiling:
    return input_size, 0
  if input_size_override >= 0 and input_size > input_size_override:
    raise ValueError(f"reduction_input_size_override: {input_size_override} should be "
                     f"greater equals to operands[reduction_dim]: {input_size}")
  logical = input_size_override if input_size_override >= 0 else input_size
  if k == 1:
    return tiling, _log2_ceil(-(-logical // tiling))
  if not 0.0 < recall_target <= 1.0:
    raise ValueError("recall_target should range in (0,1]")
  # Expected recall with M windows is (1 - 1/M)^(K-1) ~ exp((1-K)/M): M = (1-K)/log(r).
  m = min(max(int((1.0 - k) / math.log(float(np.float32(recall_target)))), tiling),
          input_size)
  log2_red = _log2_floor(logical // m)
  if log2_red == 0:
    return input_size, 0
  log2_red = min(log2_red, _log2_ceil(input_size // tiling))
  blocks = -(-input_size // tiling)
  return -(-blocks // (1 << log2_red)) * tiling, log2_red


NONCONTRACTING, CONTRACTING, BATCH = "RAGGED_NONCONTRACTING", "RAGGED_CONTRACTING", "RAGGED_BATCH"


def _remaining(n, *exclude):
  ex = set(d for e in exclude for d in e)
  return [i for i in range(n) if i not in ex]


def ragged_mode_and_dim(lhs_rank, dot_dimension_numbers, lhs_ragged_dimensions):
  """(mode, lhs ragged dimension) of a ragged dot: the kind of dimension the lhs ragged
  dimension is (non-contracting, contracting or batch)."""
  ragged = lhs_ragged_dimensions[0]
  (lc, _), (lb, _) = dot_dimension_numbers
  nc = _remaining(lhs_rank, lc, lb)
  if ragged in nc:
    return NONCONTRACTING, ragged
  if ragged in lc:
    return CONTRACTING, ragged
  if ragged in lb:
    return BATCH, ragged
  raise TypeError(f"lhs_ragged_dim {ragged} not found in lhs_noncontracting {nc}, "
                  f"lhs_contracting {list(lc)}, or lhs_batch {list(lb)}.")


def ragged_prefix_dims(mode, rank, ragged, batch, contract):
  """The lhs dimensions a ragged dot's ``group_sizes`` is indexed by before its group
  axis."""
  batch, contract = list(batch), list(contract)
  nc = _remaining(rank, contract, batch)
  if mode == NONCONTRACTING:
    return batch + nc[:nc.index(ragged)]
  if mode == CONTRACTING:
    return batch + contract[:contract.index(ragged)]
  return batch[:batch.index(ragged)]
