"""The CPU backend's compiler: jaxprs to fused native code (see docs/compiler.md).

``primitive_table`` says what every stage knows about each primitive (one row per name).
Stages, one module each: ``ir`` (the program), ``simplify`` (exact rewrites), ``dot`` (BLAS
layouts and calls), ``fusion`` (kernel groups), ``plan`` (segments, buffer plan),
``lower_c`` (per-primitive C), ``codegen_c`` (kernels; ``tree_c`` its XLA-order sum
helpers), ``cmodule`` (the translation unit and its C ABI), ``build`` (the C compiler),
``cache`` (memory and disk caches), ``runtime`` (the thread pool), ``control`` (control
flow with native bodies) and ``native`` (the driver and the host program).  ``backends/cpu/executable.py`` uses it for jit's native
tier.
"""
