"""The GPU backend (platform "gpu", alias "cuda"): NVIDIA GPUs through CuPy.

Importing this package registers the platform and imports nothing GPU-related: the
factory (``platform.make_backend``) runs when devices are first used and starts the
backend only when CuPy imports and a CUDA device exists.  The jit compiler's CUDA C
emitter (``codegen_cuda.py``), NVRTC compilation (``nvrtc.py``) and the CPU emulation of
the emitted kernels (``emulate.py``) need no GPU.  See docs/gpu.md.
"""
from pyjax._src.backends.gpu import platform as _platform  # noqa: F401  (registers "gpu")
