"""jax.profiler: trace files of pyjax's own events, annotations, memory profiles."""
import glob
import gzip
import json
import os
import threading

import numpy as np
import pytest

import pyjax
import pyjax.numpy as jnp
from pyjax import profiler
from pyjax._src import profiler as _prof_impl
from pyjax._src.backends.cpu import executable


def _load(log_dir, name="*.trace.json.gz"):
  paths = glob.glob(os.path.join(log_dir, "plugins", "profile", "*", name))
  assert len(paths) == 1, paths
  with gzip.open(paths[0], "rt") as f:
    return json.load(f)


def _events(trace, cat=None):
  evs = [e for e in trace["traceEvents"] if e["ph"] == "X"]
  return [e for e in evs if cat is None or e["cat"] == cat]


@pytest.fixture(autouse=True)
def _no_trace_left():
  yield
  if _prof_impl.session is not None:   # a failed test must not leave a trace running
    profiler.stop_trace()


def test_jitted_program_trace(tmp_path, monkeypatch):
  from pyjax._src.backends.cpu.compiler.native import cache
  monkeypatch.setenv("PYJAX_CACHE_DIR", str(tmp_path / "cache"))   # compile afresh
  cache.clear_memory()

  @pyjax.jit
  def f(x, y):
    return jnp.tanh(x) * y + 1.0

  with executable.compile_mode_override("sync"):
    with profiler.trace(str(tmp_path)):
      x = pyjax.device_put(np.ones((64, 64), np.float32))
      with profiler.TraceAnnotation("step", phase="train"):
        y = f(x, x)
        host = pyjax.device_get(y)
  np.testing.assert_allclose(host, np.tanh(1.0) + 1.0, rtol=1e-6)
  t = _load(str(tmp_path))
  evs = _events(t)
  cats = {e["cat"] for e in evs}
  assert {"trace", "compile", "execute", "transfer", "user"} <= cats
  names = [e["name"] for e in evs]
  assert "trace f" in names
  assert any(n.startswith("cc ") for n in names)          # the C compiler ran
  assert any(n.startswith("load ") for n in names)        # the shared object was loaded
  ex = [e for e in evs if e["name"] == "jit_f"]
  assert len(ex) == 1 and ex[0]["args"]["tier"] == "native"
  transfers = {e["name"]: e["args"] for e in _events(t, "transfer")}
  assert set(transfers) == {"device_put", "device_get"}
  assert transfers["device_put"]["bytes"] == transfers["device_get"]["bytes"] == 64 * 64 * 4
  assert transfers["device_get"]["direction"] == "device_to_host"
  for e in evs:
    assert e["ts"] >= 0 and e["dur"] >= 0
    assert isinstance(e["tid"], int) and e["pid"] == os.getpid()
  # the annotation spans the execution and the transfer out (same thread)
  (ann,) = [e for e in evs if e["name"] == "step"]
  assert ann["args"] == {"phase": "train"}
  for e in ex + [e for e in evs if e["name"] == "device_get"]:
    assert e["tid"] == ann["tid"]
    assert ann["ts"] <= e["ts"] and e["ts"] + e["dur"] <= ann["ts"] + ann["dur"] + 1e-3
  # thread names are recorded as metadata events
  meta = [e for e in t["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"]
  assert {m["tid"] for m in meta} >= {e["tid"] for e in evs}
  assert "metadata" in t


def test_numpy_tier_execute_event(tmp_path):
  g = pyjax.jit(lambda a: a * 2)
  with executable.compile_mode_override("off"):
    with profiler.trace(tmp_path):
      g(jnp.arange(4.0))
  ex = [e for e in _events(_load(str(tmp_path)), "execute") if e["name"] == "jit_<lambda>"]
  assert len(ex) == 1 and ex[0]["args"]["tier"] == "numpy"


def test_nesting_and_annotate_function(tmp_path):
  @profiler.annotate_function
  def inner():
    with profiler.TraceAnnotation("leaf"):
      pass

  @pyjax.profiler.annotate_function
  def outer_fn():
    for _ in range(2):
      inner()

  with profiler.trace(tmp_path):
    with profiler.StepTraceAnnotation("train", step_num=3):
      outer_fn()
  evs = _events(_load(str(tmp_path)))
  by = {}
  for e in evs:
    by.setdefault(e["name"], []).append(e)
  (step,) = by["train"]
  assert step["cat"] == "step" and step["args"] == {"step_num": 3}
  (o,) = [e for e in evs if e["name"].endswith("outer_fn")]
  inners = [e for e in evs if e["name"].endswith("inner")]
  assert len(inners) == 2 and len(by["leaf"]) == 2

  def within(a, b):
    return b["ts"] <= a["ts"] and a["ts"] + a["dur"] <= b["ts"] + b["dur"] + 1e-3
  assert within(o, step)
  by_ts = lambda evs: sorted(evs, key=lambda e: e["ts"])  # noqa: E731
  for i, leaf in zip(by_ts(inners), by_ts(by["leaf"])):
    assert within(i, o) and within(leaf, i)
  a, b = sorted(inners, key=lambda e: e["ts"])
  assert a["ts"] + a["dur"] <= b["ts"] + 1e-3   # siblings do not overlap


def test_annotations_without_trace_are_noops():
  with profiler.TraceAnnotation("x", a=1):
    pass
  f = profiler.annotate_function(lambda v: v + 1, name="plus")
  assert f(1) == 2
  assert _prof_impl.session is None


def test_start_stop_errors(tmp_path):
  profiler.start_trace(tmp_path)
  with pytest.raises(RuntimeError, match="Profile has already been started. Only one "
                                         "profile may be run at a time."):
    profiler.start_trace(tmp_path)
  with pytest.raises(RuntimeError, match="already been started"):
    with profiler.trace(tmp_path):
      pass
  profiler.stop_trace()
  with pytest.raises(RuntimeError, match="No profile started"):
    profiler.stop_trace()
  _load(str(tmp_path))   # the one trace was written


def test_trace_stops_on_exception_and_perfetto_file(tmp_path):
  with pytest.raises(ZeroDivisionError):
    with profiler.trace(tmp_path, create_perfetto_trace=True):
      with profiler.TraceAnnotation("boom"):
        1 / 0
  assert _prof_impl.session is None
  t = _load(str(tmp_path), "perfetto_trace.json.gz")
  assert "metadata" not in t
  assert [e["name"] for e in _events(t)] == ["boom"]


def test_stream_thread_events(tmp_path):
  """Work run on a stream's worker thread is recorded with that thread's id."""
  from pyjax._src.runtime import devices
  stream = devices.default_device().stream
  gate = threading.Event()

  def work(a):
    gate.wait(5)
    return a + 1
  def after(a):
    return a * 2
  with profiler.trace(tmp_path / "t"):
    # the caller waits for ``after``, whose predecessor is running on the worker: it does
    # not run it itself
    stream.submit(work, [np.zeros(3)], 1)
    (pb,) = stream.submit(after, [np.ones(3)], 1)
    t = threading.Timer(0.05, gate.set)
    t.start()
    out = pb.result()
    t.join()
  tmp_path = tmp_path / "t"
  np.testing.assert_array_equal(out, 2 * np.ones(3))
  evs = _events(_load(str(tmp_path)))
  (task,) = [e for e in evs if e["name"] == "stream task work"]
  waits = _events(_load(str(tmp_path)), "wait")
  (task2,) = [e for e in evs if e["name"] == "stream task after"]
  assert task["tid"] != threading.get_ident() and task2["tid"] == task["tid"]
  assert task2["ts"] >= task["ts"] + task["dur"] - 1e-3
  assert waits and all(w["tid"] == threading.get_ident() for w in waits)
  assert task["dur"] >= 30_000   # waited for the gate (µs)


def test_make_jaxpr_records_trace(tmp_path):
  with profiler.trace(tmp_path):
    pyjax.make_jaxpr(lambda a: a + 1)(1.0)
  evs = _events(_load(str(tmp_path)), "trace")
  assert [e["name"] for e in evs] == ["trace <lambda>"]


# --- memory profiles ------------------------------------------------------------------------
def _pprof_class():
  pytest.importorskip("google.protobuf")
  from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
  fdp = descriptor_pb2.FileDescriptorProto(name="pprof_test.proto", package="pproftest",
                                           syntax="proto3")
  T = descriptor_pb2.FieldDescriptorProto

  def msg(name, fields):
    m = fdp.message_type.add(name=name)
    for fname, num, typ, rep, tname in fields:
      f = m.field.add(name=fname, number=num, type=typ,
                      label=T.LABEL_REPEATED if rep else T.LABEL_OPTIONAL)
      if tname:
        f.type_name = f".pproftest.{tname}"
  I64, U64, MSG, STR, BOOL = T.TYPE_INT64, T.TYPE_UINT64, T.TYPE_MESSAGE, T.TYPE_STRING, T.TYPE_BOOL
  msg("ValueType", [("type", 1, I64, 0, None), ("unit", 2, I64, 0, None)])
  msg("Label", [("key", 1, I64, 0, None), ("str", 2, I64, 0, None), ("num", 3, I64, 0, None),
                ("num_unit", 4, I64, 0, None)])
  msg("Sample", [("location_id", 1, U64, 1, None), ("value", 2, I64, 1, None),
                 ("label", 3, MSG, 1, "Label")])
  msg("Line", [("function_id", 1, U64, 0, None), ("line", 2, I64, 0, None)])
  msg("Location", [("id", 1, U64, 0, None), ("mapping_id", 2, U64, 0, None),
                   ("address", 3, U64, 0, None), ("line", 4, MSG, 1, "Line"),
                   ("is_folded", 5, BOOL, 0, None)])
  msg("Function", [("id", 1, U64, 0, None), ("name", 2, I64, 0, None),
                   ("system_name", 3, I64, 0, None), ("filename", 4, I64, 0, None),
                   ("start_line", 5, I64, 0, None)])
  msg("Profile", [("sample_type", 1, MSG, 1, "ValueType"), ("sample", 2, MSG, 1, "Sample"),
                  ("location", 4, MSG, 1, "Location"), ("function", 5, MSG, 1, "Function"),
                  ("string_table", 6, STR, 1, None), ("time_nanos", 9, I64, 0, None),
                  ("period_type", 11, MSG, 0, "ValueType"), ("comment", 13, I64, 1, None)])
  pool = descriptor_pool.DescriptorPool()
  pool.Add(fdp)
  return message_factory.GetMessageClass(pool.FindMessageTypeByName("pproftest.Profile"))


def test_device_memory_profile_is_pprof(tmp_path):
  Profile = _pprof_class()
  keep = [jnp.zeros((123, 7), jnp.float32), jnp.zeros((123, 7), jnp.float32),
          jnp.arange(11, dtype=jnp.int32)]
  path = tmp_path / "mem.prof"
  profiler.save_device_memory_profile(str(path))
  p = Profile()
  p.ParseFromString(gzip.decompress(path.read_bytes()))
  st = list(p.string_table)
  assert st[0] == ""
  assert [(st[v.type], st[v.unit]) for v in p.sample_type] == [("allocations", "count"),
                                                               ("space", "bytes")]
  funcs = {f.id: st[f.name] for f in p.function}
  locs = {loc.id: funcs[loc.line[0].function_id] for loc in p.location}
  got = {}
  for s in p.sample:
    labels = {st[lab.key]: (st[lab.str] if lab.str else lab.num) for lab in s.label}
    got[locs[s.location_id[0]]] = (list(s.value), labels)
  count, nbytes = got["f32[123,7]"][0]
  assert count >= 2 and nbytes >= 2 * 123 * 7 * 4 and nbytes % (123 * 7 * 4) == 0
  assert got["f32[123,7]"][1]["device"] == "cpu:0"
  assert got["f32[123,7]"][1]["kind"] == "buffer"
  assert got["i32[11]"][0][1] % 44 == 0
  del keep


def test_device_memory_profile_backend():
  data = profiler.device_memory_profile("cpu")
  assert gzip.decompress(data)[:1] == b"\x0a"   # field 1 (sample_type) comes first
  with pytest.raises(RuntimeError):
    profiler.device_memory_profile("tpu")
