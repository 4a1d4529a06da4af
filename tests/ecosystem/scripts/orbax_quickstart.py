"""orbax-checkpoint quick start: save a train state (params pytree + optax state + step +
typed PRNG key)
with a StandardCheckpointer and a CheckpointManager, restore it, keep training."""
import json
import os
import shutil
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
import optax
import orbax.checkpoint as ocp

key = jax.random.PRNGKey(0)
k1, k2, k3 = jax.random.split(key, 3)
params = {"w": jax.random.normal(k1, (4, 3)), "b": jnp.zeros((3,)),
          "emb": jax.random.normal(k2, (5, 2), dtype=jnp.bfloat16)}
tx = optax.adam(1e-2)
x = jax.random.normal(k3, (8, 4))


@jax.jit
def step(params, opt):
  def loss_fn(p):
    return jnp.mean((x @ p["w"] + p["b"]) ** 2) + jnp.sum(p["emb"].astype(jnp.float32) ** 2)
  loss, g = jax.value_and_grad(loss_fn)(params)
  updates, opt = tx.update(g, opt, params)
  return optax.apply_updates(params, updates), opt, loss


opt = tx.init(params)
for _ in range(3):
  params, opt, loss = step(params, opt)
state = {"params": params, "opt_state": opt, "step": jnp.asarray(3, jnp.int32),
         "rng": jax.random.key(3)}

root = tempfile.mkdtemp(prefix="orbax_quickstart_")
# 1. StandardCheckpointer: save, then restore into the same structure.
ckptr = ocp.StandardCheckpointer()
path = os.path.join(root, "state")
ckptr.save(path, state)
ckptr.wait_until_finished()
abstract = jax.tree.map(ocp.utils.to_shape_dtype_struct, state)
restored = ckptr.restore(path, abstract)
def _data(a):
  return jax.random.key_data(a) if jnp.issubdtype(a.dtype, jax.dtypes.prng_key) else a


same = jax.tree.map(lambda a, b: bool(np.array_equal(np.asarray(_data(a)), np.asarray(_data(b)))
                                      and a.dtype == b.dtype and a.shape == b.shape),
                    state, restored)

# 2. CheckpointManager: two steps, keep the latest.
mngr = ocp.CheckpointManager(os.path.join(root, "mngr"),
                             options=ocp.CheckpointManagerOptions(max_to_keep=1))
mngr.save(3, args=ocp.args.StandardSave(state))
params2, opt2, loss2 = step(params, opt)
state2 = {"params": params2, "opt_state": opt2, "step": jnp.asarray(4, jnp.int32),
          "rng": jax.random.key(4)}
mngr.save(4, args=ocp.args.StandardSave(state2))
mngr.wait_until_finished()
latest = mngr.latest_step()
restored2 = mngr.restore(latest, args=ocp.args.StandardRestore(state2))
mngr.close()

# Continue training from the restored state: same losses as from the original.
p, o = restored["params"], restored["opt_state"]
losses = []
for _ in range(2):
  p, o, l = step(p, o)
  losses.append(float(l))
shutil.rmtree(root)
print("RESULT " + json.dumps({
    "all_equal": all(jax.tree.leaves(same)),
    "restored_step": int(restored["step"]),
    "latest": int(latest), "all_steps": [int(s) for s in mngr.all_steps()],
    "restored2_step": int(restored2["step"]),
    "w_sum": float(restored2["params"]["w"].sum()),
    "emb_dtype": str(restored["params"]["emb"].dtype),
    "mu_sum": float(jax.tree.leaves(restored["opt_state"][0].mu)[0].sum()),
    "rng_uniform": float(jax.random.uniform(restored["rng"])),
    "losses": losses}))
