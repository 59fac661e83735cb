"""Contraction: ``lax.dot_general``, the one primitive behind ``matmul``, ``dot``, ``einsum``
and ``tensordot``.

``dimension_numbers = ((x_contract, y_contract), (x_batch, y_batch))`` names the dims that are
summed over and those that are matched one for one; every other dim is free. The result's
dims are the batch dims, then ``x``'s free dims, then ``y``'s. The product is linear in each
operand, so each cotangent is again a ``dot_general``: the cotangent contracted with the other
operand over the other's free dims, its dims put back in the operand's order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from . import dtypes
from .core import Primitive, get_aval, impl_rules, jvp_rules, vjp_rules, vjp_rules_take_needs
from .precision import canonicalize_precision
from .primitives import convert_element_type, defjvp, transpose
from .threads import COORDINATOR

__all__ = ["dot_general", "dot_general_p"]


# --8<-- [start:dot_general]
dot_general_p = Primitive("dot_general")
def dot_general(x, y, dimension_numbers, precision=None, preferred_element_type=None,
                out_sharding=None):
    """Contracts ``x`` and ``y``. ``dimension_numbers = ((x_contract, y_contract),
    (x_batch, y_batch))``; the result's dims are batch, then x's free, then y's free.
    ``preferred_element_type``: the result's type, and the one integers accumulate in.
    ``precision`` is checked and changes nothing (see ``precision.py``). ``out_sharding`` is
    the result's sharding, where stage 4 cannot tell it from the operands' (None until
    then)."""
    canonicalize_precision(precision)
    (lc, rc), (lb, rb) = dimension_numbers
    dims = ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb)))
    preferred = preferred_element_type and dtypes.canonicalize_dtype(preferred_element_type)
    return dot_general_p.bind(x, y, dimension_numbers=dims, out_sharding=out_sharding,
                              preferred_element_type=preferred)


def _free_dims(ndim: int, contract: Sequence[int], batch: Sequence[int]) -> list[int]:
    return [d for d in range(ndim) if d not in contract and d not in batch]


def dot_general_impl(x, y, *, dimension_numbers, preferred_element_type, out_sharding=None):
    (lc, rc), (lb, rb) = dimension_numbers
    work = dtypes.dot_accumulation_dtype(x.dtype, preferred_element_type)
    x, y = x.astype(work, copy=False), y.astype(work, copy=False)
    COORDINATOR.coordinate()  # BLAS's threads: as many as other processes leave cores
    if not lb and x.ndim == y.ndim == 2 and len(lc) == 1:
        # A matrix product: BLAS reads a transposed view through its own flag, no copy.
        out = np.matmul(x if lc == (1,) else x.T, y if rc == (0,) else y.T)
    elif not lb:
        out = np.tensordot(x, y, axes=(lc, rc))
    else:
        lf, rf = _free_dims(x.ndim, lc, lb), _free_dims(y.ndim, rc, rb)
        batch_shape = [x.shape[d] for d in lb]
        contracted = math.prod(x.shape[d] for d in lc)  # (not -1: a batch may be empty)
        xt = x.transpose(lb + tuple(lf) + lc).reshape(
            math.prod(batch_shape), math.prod(x.shape[d] for d in lf), contracted)
        yt = y.transpose(rb + rc + tuple(rf)).reshape(
            math.prod(batch_shape), contracted, math.prod(y.shape[d] for d in rf))
        # Nothing to sum (per-example outer products, as vmap of a weight's gradient makes):
        # a broadcast multiply, about 3x faster than a batch of rank-1 matrix products.
        out = (xt * yt if xt.shape[2] == 1 else np.matmul(xt, yt)).reshape(
            batch_shape + [x.shape[d] for d in lf] + [y.shape[d] for d in rf])
    return np.asarray(out, dtype=preferred_element_type or x.dtype)
impl_rules[dot_general_p] = dot_general_impl


def _dot_general_ct(ct, other, ct_free, other_free, ct_batch, other_batch,
                    own_batch, own_free, own_contract, other_contract, own_sharding):
    """The cotangent of one operand: contract ``ct`` with the other operand over the other's
    free dims, then put the dims back in the operand's order. It gets the operand's sharding
    (``own_sharding``, from stage 4 on): when both sides of the contraction are split, only
    the primal says how the gradient is laid out."""
    # Dims of the result, named by the operand dim each stands for: the batch dims, our free
    # dims (they come from ct), and our contracting dims (they come from the other operand,
    # in the order of its own dims).
    from_other = [own for _, own in sorted(zip(other_contract, own_contract))]
    ct_first = list(own_batch) + list(own_free) + from_other
    other_first = list(own_batch) + from_other + list(own_free)
    if other_first == sorted(other_first) != ct_first:
        # Contracting in the other order lands in our layout directly, so the cotangent is
        # contiguous (a weight's gradient x.T @ ct rather than a transposed (ct.T @ x)).
        return dot_general(other, ct, ((other_free, ct_free), (other_batch, ct_batch)),
                           out_sharding=own_sharding)
    perm = tuple(np.argsort(ct_first))
    result = dot_general(ct, other, ((ct_free, other_free), (ct_batch, other_batch)),
                         out_sharding=None if own_sharding is None else
                         own_sharding.transposed(tuple(np.argsort(perm))))
    return result if perm == tuple(range(len(perm))) else transpose(result, perm)


def dot_general_vjp(ct, x, y, *, out, dimension_numbers, preferred_element_type,
                    out_sharding=None, needs=(True, True)):
    (lc, rc), (lb, rb) = dimension_numbers
    lf = _free_dims(get_aval(x).ndim, lc, lb)
    rf = _free_dims(get_aval(y).ndim, rc, rb)
    nb = len(lb)
    ct_batch = tuple(range(nb))
    ct_x_free = tuple(range(nb, nb + len(lf)))
    ct_y_free = tuple(range(nb + len(lf), nb + len(lf) + len(rf)))
    ct_x = ct_y = None
    if needs[0]:
        ct_x = _dot_general_ct(ct, _like(y, ct), ct_y_free, tuple(rf), ct_batch, rb, lb, lf,
                               lc, rc, get_aval(x).sharding)
    if needs[1]:
        ct_y = _dot_general_ct(ct, _like(x, ct), ct_x_free, tuple(lf), ct_batch, lb, rb, rf,
                               rc, lc, get_aval(y).sharding)
    # With a preferred_element_type, the cotangents were contracted in the result's type
    return [None if c is None else _like(c, p) for c, p in ((ct_x, x), (ct_y, y))]


def _like(x, other):
    """``x`` in ``other``'s dtype."""
    dtype = get_aval(other).dtype
    return x if get_aval(x).dtype == dtype else convert_element_type(x, dtype)
vjp_rules[dot_general_p] = dot_general_vjp
vjp_rules_take_needs.add(dot_general_p)
jvp_rules[dot_general_p] = defjvp(
    dot_general_p, lambda x_dot, x, y, *, out, **params: dot_general_p.bind(x_dot, y, **params),
    lambda y_dot, x, y, *, out, **params: dot_general_p.bind(x, y_dot, **params))
# --8<-- [end:dot_general]
