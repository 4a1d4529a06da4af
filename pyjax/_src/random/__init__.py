"""jax.random: PRNG implementations (prng), typed key arrays (keys) and samplers."""
