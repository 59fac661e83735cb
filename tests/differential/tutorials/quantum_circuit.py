"""A variational quantum circuit on three qubits simulated with complex64 state vectors:
single-qubit rotations placed by jnp.kron, CNOTs as permutation matrices, time evolution
under a transverse-field Ising Hamiltonian by jnp.linalg.eigh, a real expectation
value and its gradient in the real circuit parameters, with a parameter-shift check. The
Hamiltonian is real and symmetric, so the evolution is built from its eigendecomposition
(complex matrices are not decomposed here: see the course's "Differences from JAX")."""
import functools

import jax
import jax.numpy as jnp

NQ = 3
I2 = jnp.eye(2, dtype=jnp.complex64)
X = jnp.array([[0, 1], [1, 0]], dtype=jnp.complex64)
Y = jnp.array([[0, -1j], [1j, 0]], dtype=jnp.complex64)
Z = jnp.array([[1, 0], [0, -1]], dtype=jnp.complex64)


def on_qubit(op, q):
    return functools.reduce(jnp.kron, [op if i == q else I2 for i in range(NQ)])


def ry(theta):
    c, s = jnp.cos(theta / 2), jnp.sin(theta / 2)
    return jnp.array([[c, -s], [s, c]]).astype(jnp.complex64)


def rz(theta):
    return jnp.diag(jnp.exp(jnp.array([-0.5j, 0.5j]) * theta)).astype(jnp.complex64)


def cnot(control, target):
    idx = jnp.arange(2 ** NQ)
    bits = (idx[:, None] >> (NQ - 1 - jnp.arange(NQ))) & 1
    flipped = bits.at[:, target].set(bits[:, target] ^ bits[:, control])
    new = jnp.sum(flipped << (NQ - 1 - jnp.arange(NQ)), axis=1)
    return jax.nn.one_hot(new, 2 ** NQ, dtype=jnp.complex64).T


def hamiltonian(field):
    zz = sum(on_qubit(Z, q) @ on_qubit(Z, q + 1) for q in range(NQ - 1))
    xs = sum(on_qubit(X, q) for q in range(NQ))
    return -zz - field * xs


def evolution(h, t):
    """exp(-i t h) for a real symmetric h, from its eigendecomposition."""
    lam, v = jnp.linalg.eigh(jnp.real(h))
    return (v * jnp.exp(-1j * t * lam)) @ v.T


def circuit(params, t):
    psi = jnp.zeros(2 ** NQ, jnp.complex64).at[0].set(1.0)
    for layer in params:
        for q in range(NQ):
            psi = on_qubit(ry(layer[q, 0]), q) @ psi
            psi = on_qubit(rz(layer[q, 1]), q) @ psi
        for q in range(NQ - 1):
            psi = cnot(q, q + 1) @ psi
    u = evolution(hamiltonian(0.7), t)
    return u @ psi


def energy(params, t=0.3):
    psi = circuit(params, t)
    return jnp.real(jnp.vdot(psi, hamiltonian(0.7) @ psi))


def main():
    params = 0.4 * jax.random.normal(jax.random.key(21), (2, NQ, 2))
    psi = jax.jit(circuit)(params, 0.3)
    e, g = jax.jit(jax.value_and_grad(energy))(params)
    shift = jnp.zeros_like(params).at[0, 1, 0].set(jnp.pi / 2)
    shift_grad = 0.5 * (energy(params + shift) - energy(params - shift))
    for _ in range(5):
        params = params - 0.2 * jax.grad(energy)(params)
    h = hamiltonian(0.7)
    evals = jnp.linalg.eigvalsh(jnp.real(h))
    probs = jnp.abs(psi) ** 2
    z0 = jnp.real(jnp.vdot(psi, on_qubit(Z, 0) @ psi))
    return {"psi": psi, "norm": jnp.sum(probs), "energy": e, "grad": g,
            "shift_grad": (shift_grad, g[0, 1, 0]), "trained": energy(params),
            "ground": evals[0], "z0": z0, "unitary_check": jnp.abs(
                evolution(h, 0.5) @ evolution(h, -0.5) - jnp.eye(8)).max(),
            "conj_angle": (jnp.angle(psi[:3]), jnp.conj(psi[1]) * psi[1])}
