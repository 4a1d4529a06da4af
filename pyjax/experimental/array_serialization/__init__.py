"""``jax.experimental.array_serialization``: array checkpoints with TensorStore."""
