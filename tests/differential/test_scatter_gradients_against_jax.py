"""Gradients of ``.at[]`` writes with repeated indices against JAX's: of several updates to one
place only one is written (the last, in both libraries), and only it has a derivative.

Every update of a repeated place once got the place's cotangent here (a gather of it), so
``grad`` summed the gradient once per repeat and disagreed with ``jacfwd``."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import stage4_sharding as oj  # noqa: E402

WEIGHTS = np.array([1.0, 2.0, 3.0], np.float32)
INDICES = [[0, 0], [0, 0, 1, 2], [2, 0, 2, 2], [0, 5, 0], [-1, 2, 2]]


def _loss(j, idx):
    def loss(u):
        return j.numpy.sum(j.numpy.zeros(3).at[j.numpy.array(idx)].set(u) * WEIGHTS)
    return loss


def _updates(idx):
    return np.arange(1.0, len(idx) + 1, dtype=np.float32)


@pytest.mark.parametrize("idx", INDICES, ids=str)
def test_set_with_repeated_indices_differentiates_the_written_update_only(idx):
    u = _updates(idx)
    want = np.asarray(jax.grad(_loss(jax, idx))(u))
    for how, f in (("grad", oj.grad(_loss(oj, idx))), ("jit", oj.jit(oj.grad(_loss(oj, idx)))),
                   ("jacfwd", oj.jacfwd(_loss(oj, idx)))):
        np.testing.assert_array_equal(np.asarray(f(u)), want, err_msg=how)


def test_set_of_rows_with_repeated_indices_and_vmap_over_indices():
    rows = np.arange(6.0, dtype=np.float32).reshape(3, 2)
    weights = np.arange(6.0, dtype=np.float32).reshape(3, 2)

    def of_rows(j):
        return lambda u: (j.numpy.zeros((3, 2)).at[j.numpy.array([1, 1, 0])].set(u)
                          * weights).sum()
    np.testing.assert_array_equal(np.asarray(oj.grad(of_rows(oj))(rows)),
                                  np.asarray(jax.grad(of_rows(jax))(rows)))

    def per_example(j):
        return j.vmap(j.grad(lambda u, i: j.numpy.sum(j.numpy.zeros(3).at[i].set(u) * WEIGHTS)))
    us, idxs = np.arange(8.0, dtype=np.float32).reshape(4, 2), np.array([[0, 0], [1, 0], [2, 2],
                                                                         [0, 1]])
    np.testing.assert_array_equal(np.asarray(per_example(oj)(us, idxs)),
                                  np.asarray(per_example(jax)(us, idxs)))


def test_jacrev_and_jacfwd_of_a_set_with_repeated_indices_agree():
    def f(j):
        return lambda u: j.numpy.zeros(3).at[j.numpy.array([0, 0, 1])].set(u)
    u = np.ones(3, np.float32)
    want = np.asarray(jax.jacrev(f(jax))(u))
    np.testing.assert_array_equal(np.asarray(oj.jacrev(f(oj))(u)), want)
    np.testing.assert_array_equal(np.asarray(oj.jacfwd(f(oj))(u)), want)


@pytest.mark.parametrize("index", [-6, 5, -1])
def test_second_derivative_through_an_index_past_the_end_is_jax_s(index):
    """``x[idx]`` gathers with ``PROMISE_IN_BOUNDS``: an index past the end reads the clamped
    row, and its VJP's scatter-add drops that row's cotangent. The scatter's own transpose (the
    second derivative) reads with the same mode, so it reads the clamped row, as JAX's does.
    Found by ``tools/differential.py --out-of-bounds`` (program 5240064): a float32 grad of
    grad that differed at every element."""
    x = np.array([[1.14, 1.85, 0.775]], np.float32)

    def second(lib):
        np_ = lib.numpy
        f = lambda v: np_.sum(np_.sin(np_.dot(v, v[np_.array([0, 0, index])])))  # noqa: E731
        return lib.grad(lambda v: np_.sum(lib.grad(f)(v) ** 2))(x)

    np.testing.assert_allclose(np.asarray(second(oj)), np.asarray(second(jax)), rtol=1e-4)
