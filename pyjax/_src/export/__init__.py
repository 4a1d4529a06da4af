"""``jax.export`` implementation: ``_export.py`` (Exported, export, deserialize) and
``serialization.py`` (pyjax's versioned binary format of a jaxpr)."""
