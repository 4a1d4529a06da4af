"""The native runtime shared by every executable: a small work-sharing thread pool and
per-thread scratch memory.

``pj_parallel_for(fn, ctx, n, grain)`` runs ``fn(ctx, lo, hi)`` over ``[0, n)`` in chunks
(about four per thread, each at least ``grain``; a negative grain asks for one chunk per
thread, each at least ``-grain``).
The calling thread works too and returns as soon as every chunk is *done* -- it never
waits for a worker that has not started (unlike an OpenMP barrier, which waits for every
thread of the team to arrive: on a loaded machine one descheduled thread stalls the whole
loop for a scheduler time slice).  Workers spin briefly after a job (consecutive kernels
start fast), then sleep on a condition variable.  A loop whose caller waited far longer
than one chunk takes for a worker (descheduled on a loaded machine) runs serially for a
bounded while (``pj_backoff_record``: 1 to 64 ms, per loop function; other loops keep their
threads).  Only one parallel loop runs at a time; a
second caller (another Python thread with the GIL released) runs its loop on its own
thread instead of waiting.

``pj_scratch_alloc(n)`` / ``pj_scratch_free(p)`` hand kernels temporary memory from a
buffer each thread keeps between calls (see the C comment), so a steady-state call
allocates only its outputs.

The library is compiled once per toolchain (and cached on disk like kernels); each
executable receives these functions' addresses when it is instantiated.
``PYJAX_NUM_THREADS`` sets the pool size (default: the CPUs this process may use).
"""
from __future__ import annotations

import ctypes
import os
import threading

from pyjax._src.backends.cpu.compiler.kernels import sgemm as _sgemm

RUNTIME_C = r"""
#define _GNU_SOURCE 1
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sched.h>
#include <time.h>

typedef void (*pj_task_fn)(void *ctx, int64_t lo, int64_t hi);

/* Two job slots used alternately; ``pj_claim`` packs (generation << 32 | next chunk), so a
   worker can only claim a chunk of the job it read and a slot is never rewritten while a
   chunk of it is running (a job completes only when all its chunks are done). */
typedef struct { pj_task_fn fn; void *ctx; int64_t n, chunk, nchunks; int64_t done; } pj_job;
static pj_job pj_jobs[2];
static uint64_t pj_claim = 0;
static int pj_nthreads = 1;
static int pj_started = 0;
static uint32_t pj_gen = 0;
static pthread_mutex_t pj_job_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t pj_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pj_cv = PTHREAD_COND_INITIALIZER;
/* back-off when a worker stalls the caller (a loaded machine): the loop that stalled (keyed
   by its function) runs serially for a while -- 1 ms after a first stall, twice as long
   after each further one up to 64 ms, half as long after each smooth parallel run -- and
   every other loop keeps its threads.  Guarded by pj_job_lock. */
#define PJ_BACKOFF_SLOTS 16
#define PJ_BACKOFF_MIN_NS 1000000LL
#define PJ_BACKOFF_MAX_NS 64000000LL
typedef struct { pj_task_fn fn; int64_t until, penalty; } pj_backoff_t;
static pj_backoff_t pj_backoff[PJ_BACKOFF_SLOTS];

static inline int64_t pj_now_ns(void) {
  struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static inline void pj_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/* run chunks of the current job until none is left; returns how many elements this thread ran */
static int64_t pj_work(void) {
  int64_t mine = 0;
  for (;;) {
    uint64_t c = __atomic_load_n(&pj_claim, __ATOMIC_ACQUIRE);
    pj_job *J = &pj_jobs[(c >> 32) & 1];
    uint64_t idx = c & 0xFFFFFFFFu;
    if ((int64_t)idx >= __atomic_load_n(&J->nchunks, __ATOMIC_ACQUIRE)) return mine;
    if (!__atomic_compare_exchange_n(&pj_claim, &c, c + 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      continue;
    int64_t lo = (int64_t)idx * J->chunk, hi = lo + J->chunk;
    if (hi > J->n) hi = J->n;
    J->fn(J->ctx, lo, hi);
    mine += hi - lo;
    __atomic_fetch_add(&J->done, 1, __ATOMIC_ACQ_REL);
  }
}

static inline pj_backoff_t *pj_backoff_slot(pj_task_fn fn) {
  uintptr_t h = (uintptr_t)fn;
  h ^= (h >> 4) ^ (h >> 12);
  return &pj_backoff[h & (PJ_BACKOFF_SLOTS - 1)];
}

/* whether a loop of ``fn`` starting at ``now`` runs serially (its back-off window) */
int pj_backoff_serial(pj_task_fn fn, int64_t now) {
  pj_backoff_t *B = pj_backoff_slot(fn);
  return B->fn == fn && now < B->until;
}

/* the stall detector, after a parallel loop of ``fn`` split into chunks of ``chunk``
   elements: the caller started at t0, found no chunk left at t1 having run ``mine``
   elements itself, and saw the last chunk done at t2.  A worker's chunk still running at
   t1 needs at most one chunk's time (the caller's time per element times ``chunk``), so
   only a wait well beyond that means a worker was not running.  (The caller's own share
   is no yardstick: with few chunks -- GEMM blocks, a short last chunk -- it can be far
   smaller than the chunk a worker is finishing.)  Returns the loop's back-off window. */
int64_t pj_backoff_record(pj_task_fn fn, int64_t t0, int64_t t1, int64_t t2, int64_t mine,
                          int64_t chunk) {
  pj_backoff_t *B = pj_backoff_slot(fn);
  if (mine <= 0) return B->fn == fn ? B->penalty : 0;  /* workers ran it all: no yardstick */
  double chunk_ns = (double)(t1 - t0) / (double)mine * (double)chunk;
  if ((double)(t2 - t1) > 2.0 * chunk_ns + 50000.0) {
    int64_t p = B->fn == fn && B->penalty ? 2 * B->penalty : PJ_BACKOFF_MIN_NS;
    B->fn = fn;
    B->penalty = p > PJ_BACKOFF_MAX_NS ? PJ_BACKOFF_MAX_NS : p;
    B->until = t2 + B->penalty;
  } else if (B->fn == fn) {
    B->penalty = B->penalty / 2 < PJ_BACKOFF_MIN_NS ? 0 : B->penalty / 2;
  }
  return B->fn == fn ? B->penalty : 0;
}

void pj_backoff_reset(void) {
  pthread_mutex_lock(&pj_job_lock);
  for (int i = 0; i < PJ_BACKOFF_SLOTS; i++) pj_backoff[i].fn = NULL;
  pthread_mutex_unlock(&pj_job_lock);
}

int64_t pj_runtime_now_ns(void) { return pj_now_ns(); }

static void *pj_worker(void *arg) {
  (void)arg;
  uint64_t seen = 0;
  for (;;) {
    int spins = 0;
    while ((__atomic_load_n(&pj_claim, __ATOMIC_ACQUIRE) >> 32) == seen && spins < 2000) {
      pj_pause();
      spins++;
    }
    if ((__atomic_load_n(&pj_claim, __ATOMIC_ACQUIRE) >> 32) == seen) {
      pthread_mutex_lock(&pj_mu);
      while ((__atomic_load_n(&pj_claim, __ATOMIC_ACQUIRE) >> 32) == seen)
        pthread_cond_wait(&pj_cv, &pj_mu);
      pthread_mutex_unlock(&pj_mu);
    }
    seen = __atomic_load_n(&pj_claim, __ATOMIC_ACQUIRE) >> 32;
    pj_work();
  }
  return NULL;
}

int pj_runtime_init(int nthreads) {
  if (pj_started) return pj_nthreads;
  pj_started = 1;
  pj_nthreads = nthreads < 1 ? 1 : nthreads;
  for (int i = 1; i < pj_nthreads; i++) {
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &attr, pj_worker, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0) { pj_nthreads = i; break; }
  }
  return pj_nthreads;
}

void pj_parallel_for(pj_task_fn fn, void *ctx, int64_t n, int64_t grain) {
  if (n <= 0) return;
  /* grain > 0: about four chunks per thread (load balance), each at least ``grain``;
     grain < 0: one chunk per thread, each at least ``-grain`` (GEMM blocks: every chunk
     repacks the shared operand, so fewer is faster) */
  int64_t per = grain < 0 ? 1 : 4, least = grain < 0 ? -grain : (grain < 1 ? 1 : grain);
  int64_t chunk = (n + (int64_t)pj_nthreads * per - 1) / ((int64_t)pj_nthreads * per);
  if (chunk < least) chunk = least;
  if (pj_nthreads <= 1 || chunk >= n || (n + chunk - 1) / chunk > 0xFFFFFFF0LL ||
      pthread_mutex_trylock(&pj_job_lock) != 0) {
    fn(ctx, 0, n);
    return;
  }
  int64_t t0 = pj_now_ns();
  if (pj_backoff_serial(fn, t0)) {   /* this loop stalled a moment ago: backing off */
    pthread_mutex_unlock(&pj_job_lock);
    fn(ctx, 0, n);
    return;
  }
  uint32_t g = ++pj_gen;
  pj_job *J = &pj_jobs[g & 1];
  J->fn = fn; J->ctx = ctx; J->n = n; J->chunk = chunk;
  __atomic_store_n(&J->done, 0, __ATOMIC_RELEASE);
  __atomic_store_n(&J->nchunks, (n + chunk - 1) / chunk, __ATOMIC_RELEASE);
  pthread_mutex_lock(&pj_mu);
  __atomic_store_n(&pj_claim, (uint64_t)g << 32, __ATOMIC_RELEASE);
  pthread_cond_broadcast(&pj_cv);
  pthread_mutex_unlock(&pj_mu);
  int64_t mine = pj_work();
  int64_t t1 = pj_now_ns();
  /* wait only for chunks that workers claimed (never for a worker that did not start) */
  int spins = 0;
  while (__atomic_load_n(&J->done, __ATOMIC_ACQUIRE) < J->nchunks) {
    if (++spins < 2000) pj_pause();
    else sched_yield();
  }
  pj_backoff_record(fn, t0, t1, pj_now_ns(), mine, chunk);
  pthread_mutex_unlock(&pj_job_lock);
}

int pj_runtime_threads(void) { return pj_nthreads; }

/* SciPy's OpenBLAS runs single-threaded under every pyjax BLAS call (pyjax's pool splits
   the products; OpenBLAS's threaded driver blocks a long contraction differently, so its
   bits depend on its thread count).  Its thread count is one process-wide setting, so the
   callers -- native kernels on the stream and pool threads, jit's NumPy tier on the calling
   thread, a compile thread folding constants -- share one depth count: the first to enter
   saves the setting and sets 1, the last to leave restores it.  (Each saving and restoring
   it on its own let one thread restore the user's count while another was inside a
   product: that product's bits then depended on the timing.)  The callers' protocol is
   "prev = get(); if (prev != 1) set(1); ...; if (prev != 1) set(prev)": pj_blas_enter is
   their get (it returns 2, so both sets are called), pj_blas_leave their set (set(1) does
   nothing, any other value leaves). */
static void (*pj_bt_set)(int);
static int (*pj_bt_get)(void);
static pthread_mutex_t pj_bt_mu = PTHREAD_MUTEX_INITIALIZER;
static int pj_bt_depth, pj_bt_saved;
void pj_blas_threads_init(void *set, void *get) {
  pthread_mutex_lock(&pj_bt_mu);
  pj_bt_set = (void (*)(int))set; pj_bt_get = (int (*)(void))get;
  pthread_mutex_unlock(&pj_bt_mu);
}
int pj_blas_enter(void) {
  pthread_mutex_lock(&pj_bt_mu);
  if (pj_bt_depth++ == 0 && pj_bt_get && pj_bt_set) {
    pj_bt_saved = pj_bt_get();
    if (pj_bt_saved != 1) pj_bt_set(1);
  }
  pthread_mutex_unlock(&pj_bt_mu);
  return 2;
}
void pj_blas_leave(int v) {
  if (v == 1) return;
  pthread_mutex_lock(&pj_bt_mu);
  if (pj_bt_depth > 0 && --pj_bt_depth == 0 && pj_bt_set && pj_bt_saved != 1)
    pj_bt_set(pj_bt_saved);
  pthread_mutex_unlock(&pj_bt_mu);
}
int pj_blas_depth(void) { return pj_bt_depth; }

/* Per-thread scratch memory for kernels (row buffers, partial sums, sort keys): blocks cut
   from one buffer per thread that is kept between calls, so a steady-state call does not
   allocate.  Blocks are 64-byte aligned, each behind a 64-byte header (the previous block's
   offset, and whether it was freed); freeing the topmost block pops it and every freed
   block below it, so frees in any order are fine.  A block that does not fit is
   malloc'ed and freed on its own; the thread's high-water mark is remembered and the
   buffer regrown to it once nothing is cut from it (up to PJ_SCRATCH_KEEP: larger
   scratch is allocated per call).  A thread's buffer is freed when the thread exits. */
#define PJ_SCRATCH_KEEP ((size_t)64 << 20)
#define PJ_SCRATCH_NONE ((size_t)-1)
/* a block's header: the previous block's offset (buffer blocks), the block's size (malloc'ed
   ones), whether it was freed, whether it was malloc'ed; 64 bytes */
typedef struct { size_t prev, size, freed, heap, pad[4]; } pj_scratch_hdr;
typedef struct { char *base; size_t cap, top, last, live, want; } pj_scratch_t;
static __thread pj_scratch_t pj_scr = {0, 0, 0, PJ_SCRATCH_NONE, 0, 0};
static pthread_key_t pj_scratch_key;
static pthread_once_t pj_scratch_once = PTHREAD_ONCE_INIT;
static int64_t pj_scratch_blocks = 0, pj_scratch_mallocs = 0, pj_scratch_exits = 0;
static void pj_scratch_exit(void *base) {
  free(base);
  __atomic_fetch_add(&pj_scratch_exits, 1, __ATOMIC_RELAXED);
}
static void pj_scratch_key_init(void) { pthread_key_create(&pj_scratch_key, pj_scratch_exit); }
/* statistics: blocks handed out; buffers (re)allocated and blocks malloc'ed; buffers
   freed at thread exit */
void pj_scratch_stats(int64_t *out) {
  out[0] = __atomic_load_n(&pj_scratch_blocks, __ATOMIC_RELAXED);
  out[1] = __atomic_load_n(&pj_scratch_mallocs, __ATOMIC_RELAXED);
  out[2] = __atomic_load_n(&pj_scratch_exits, __ATOMIC_RELAXED);
}

void *pj_scratch_alloc(size_t n) {
  pj_scratch_t *S = &pj_scr;
  if (n > ((size_t)1 << 60)) return NULL;
  __atomic_fetch_add(&pj_scratch_blocks, 1, __ATOMIC_RELAXED);
  const size_t need = ((n + 63) & ~(size_t)63) + sizeof(pj_scratch_hdr);
  S->live += need;
  if (S->live > S->want) S->want = S->live;
  if (S->top == 0 && S->want > S->cap && S->want <= PJ_SCRATCH_KEEP) {
    free(S->base);
    size_t cap = (S->want + S->want / 2 + 63) & ~(size_t)63;
    if (cap > PJ_SCRATCH_KEEP) cap = PJ_SCRATCH_KEEP;
    S->base = (char *)aligned_alloc(64, cap);
    S->cap = S->base ? cap : 0;
    __atomic_fetch_add(&pj_scratch_mallocs, 1, __ATOMIC_RELAXED);
    pthread_once(&pj_scratch_once, pj_scratch_key_init);
    pthread_setspecific(pj_scratch_key, S->base);     /* freed at thread exit */
  }
  pj_scratch_hdr *h;
  if (S->base && need <= S->cap - S->top) {
    h = (pj_scratch_hdr *)(S->base + S->top);
    h->prev = S->last; h->heap = 0;
    S->last = S->top;
    S->top += need;
  } else {
    h = (pj_scratch_hdr *)aligned_alloc(64, need);
    if (!h) { S->live -= need; return NULL; }
    __atomic_fetch_add(&pj_scratch_mallocs, 1, __ATOMIC_RELAXED);
    h->size = need; h->heap = 1;
  }
  h->freed = 0;
  return (void *)(h + 1);
}

void pj_scratch_free(void *q) {
  if (!q) return;
  pj_scratch_t *S = &pj_scr;
  pj_scratch_hdr *h = (pj_scratch_hdr *)q - 1;
  if (h->heap) { S->live -= h->size; free(h); return; }
  h->freed = 1;
  while (S->last != PJ_SCRATCH_NONE) {
    pj_scratch_hdr *t = (pj_scratch_hdr *)(S->base + S->last);
    if (!t->freed) break;
    S->live -= S->top - S->last;
    S->top = S->last;
    S->last = t->prev;
  }
}
"""

RUNTIME_C += _sgemm.SOURCE   # pyjax's float32 GEMM kernel: one copy both jit tiers call

_lib = None
_lock = threading.Lock()
_NONE = object()


def _num_threads():
  env = os.environ.get("PYJAX_NUM_THREADS")
  if env:
    try:
      return max(int(env), 1)
    except ValueError:
      pass
  try:
    return max(len(os.sched_getaffinity(0)), 1)
  except (AttributeError, OSError):
    return max(os.cpu_count() or 1, 1)


def load(toolchain):
  """The runtime library (loaded and initialized), or None when it cannot be built."""
  global _lib
  with _lock:
    if _lib is None:
      from pyjax._src.backends.cpu.compiler.native import cache
      try:
        lib = cache.get_library(RUNTIME_C, toolchain)
        lib.pj_runtime_init.argtypes = [ctypes.c_int]
        lib.pj_runtime_init.restype = ctypes.c_int
        lib.pj_runtime_init(_num_threads())
        _lib = lib
      except Exception:  # noqa: BLE001  -- no pool: kernels run on the calling thread
        _lib = _NONE
    return None if _lib is _NONE else _lib


def parallel_for_address(toolchain):
  lib = load(toolchain)
  if lib is None:
    return 0
  return ctypes.cast(lib.pj_parallel_for, ctypes.c_void_p).value or 0


def scratch_addresses(toolchain):
  """(pj_scratch_alloc, pj_scratch_free) addresses, or (0, 0) without the runtime -- and
  under a sanitizer build, so that each block is its own malloc the sanitizer can guard."""
  lib = load(toolchain)
  if lib is None or any(f.startswith("-fsanitize") for f in toolchain.cflags):
    return 0, 0
  return tuple(ctypes.cast(getattr(lib, f), ctypes.c_void_p).value or 0
               for f in ("pj_scratch_alloc", "pj_scratch_free"))


def scratch_stats(toolchain):
  """(blocks handed out, times memory came from malloc: a buffer grown or a block that did
  not fit, buffers freed when their thread exited), over all threads so far; the second is
  constant over steady-state calls."""
  lib = load(toolchain)
  if lib is None:
    return 0, 0, 0
  out = (ctypes.c_int64 * 3)()
  lib.pj_scratch_stats(out)
  return tuple(out)


def blas_thread_shim(toolchain, set_addr, get_addr):
  """(set, get) addresses of the runtime's shared-depth wrappers of OpenBLAS's
  ``set_num_threads``/``get_num_threads`` (``pj_blas_leave``/``pj_blas_enter``: every
  caller's "one thread around this product" shares one count), or the real addresses
  without the runtime."""
  lib = load(toolchain)
  if lib is None or not (set_addr and get_addr):
    return set_addr, get_addr
  lib.pj_blas_threads_init.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
  lib.pj_blas_threads_init.restype = None
  lib.pj_blas_threads_init(set_addr, get_addr)
  return tuple(ctypes.cast(getattr(lib, f), ctypes.c_void_p).value or 0
               for f in ("pj_blas_leave", "pj_blas_enter"))


def threads(toolchain):
  lib = load(toolchain)
  if lib is None:
    return 1
  lib.pj_runtime_threads.restype = ctypes.c_int
  return lib.pj_runtime_threads()
