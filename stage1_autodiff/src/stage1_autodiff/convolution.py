"""Convolution: ``lax.conv_general_dilated``, one primitive whose transposes are convolutions.

Each operand names its dims by *dimension numbers*: ``lhs_spec`` gives the lhs's batch dim,
feature dim and spatial dims; ``rhs_spec`` the kernel's output-feature dim, input-feature dim
and spatial dims; ``out_spec`` the result's batch, feature and spatial dims. In canonical
order (``NC...``, ``OI...``, ``NC...``) the result is

    out[n, o, i] = sum over c, k of lhs_padded[n, c, i * stride + k * rhs_dilation] * rhs[o, c, k]

where ``lhs_padded`` is the lhs dilated by ``lhs_dilation`` and padded (windowed.py says how).
``feature_group_count = G`` splits the lhs features and the kernel's output features into G
groups (group-major), each convolved alone (a depthwise convolution has one feature a group);
``batch_group_count = B`` does the same with the lhs batch, and sums nothing across groups.

The transposes. A convolution is linear in each operand, so its VJP is the transpose of the
linear map ``lhs -> conv(lhs, rhs)`` (and of ``rhs -> conv(lhs, rhs)``), and both are again
convolutions:

- the lhs cotangent is the cotangent convolved with the *spatially reversed* kernel, its
  feature dims swapped: strides become lhs dilation (each result came from every
  ``stride``-th position) and lhs dilation becomes stride; the padding is the window's reach
  less the original low padding (``windowed.transpose_padding``);
- the rhs cotangent correlates the lhs with the cotangent used as a kernel: batch becomes the
  contracted dim, so the lhs's batch and feature dims swap roles, the cotangent's spatial
  dims are the window (dilated by the strides), and the original rhs dilation is the stride.

Feature groups turn into batch groups in the rhs transpose and stay feature groups in the lhs
one; batch groups turn into feature groups in both. Because the rules bind the primitive
again, second derivatives (and any order) come for free.

The NumPy impl reads the windows as a strided view of the padded lhs (no loop over output
positions) and contracts every group at once with one batched matrix product: im2col.
``conv_by_patches`` is the same computation written with stage 1's primitives (a strided
slice per kernel tap, then ``dot_general``), for the backends of stage 2 to compile.

NB: JAX's convolution is in ``jax/_src/lax/convolution.py`` (``conv_general_dilated_p``,
``_conv_general_dilated_transpose_lhs`` and ``_rhs``, ``conv_general_permutations``);
XLA's ``ConvolutionDimensionNumbers`` are the same three specs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from . import dtypes
from .contraction import dot_general
from .core import Primitive, get_aval, impl_rules, jvp_rules, vjp_rules, vjp_rules_take_needs
from .primitives import (
    Shape,
    add,
    broadcast_in_dim,
    concatenate,
    convert_element_type,
    defjvp,
    eq,
    full,
    iota,
    mul,
    reshape,
    rev,
    transpose,
)
from .slicing import GatherDimensionNumbers, GatherScatterMode, gather
from .threads import COORDINATOR
from .windowed import (
    dilate_and_pad,
    dilate_dim,
    pad_for_windows,
    padtype_to_pads,
    transpose_padding,
    window_out_shape,
    windows_view,
)

__all__ = ["ConvDimensionNumbers", "conv", "conv_by_patches", "conv_dimension_numbers",
           "conv_general_dilated", "conv_general_dilated_p", "conv_general_dilated_patches",
           "conv_shape", "conv_transpose",
           "conv_with_general_padding"]


class ConvDimensionNumbers(NamedTuple):
    """Where each operand keeps its dims: ``lhs_spec`` = (batch, feature, spatial...),
    ``rhs_spec`` = (output feature, input feature, spatial...), ``out_spec`` = (batch,
    feature, spatial...), each a tuple of dim indices."""
    lhs_spec: tuple[int, ...]
    rhs_spec: tuple[int, ...]
    out_spec: tuple[int, ...]


def conv_dimension_numbers(lhs_shape: Shape, rhs_shape: Shape,
                           dimension_numbers) -> ConvDimensionNumbers:
    """``ConvDimensionNumbers`` from ``None`` (``NC...``, ``OI...``, ``NC...``), from
    themselves, or from three strings such as ``('NHWC', 'HWIO', 'NHWC')``. Spatial dims are
    matched by letter and taken in the kernel's order.

    Example:
        >>> conv_dimension_numbers((1, 5, 5, 3), (3, 3, 3, 8), ("NHWC", "HWIO", "NHWC"))
        ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2))
    """
    if len(lhs_shape) != len(rhs_shape):
        raise TypeError(f"convolution requires lhs and rhs of equal rank, got {len(lhs_shape)} "
                        f"and {len(rhs_shape)} (shapes {tuple(lhs_shape)} and "
                        f"{tuple(rhs_shape)}).")
    if dimension_numbers is None:
        canonical = tuple(range(len(lhs_shape)))
        return ConvDimensionNumbers(canonical, canonical, canonical)
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return dimension_numbers
    if (not isinstance(dimension_numbers, (tuple, list)) or len(dimension_numbers) != 3
            or not all(isinstance(s, str) for s in dimension_numbers)):
        raise TypeError(f"convolution dimension_numbers must be None, a ConvDimensionNumbers "
                        f"or three strings such as ('NCHW', 'OIHW', 'NCHW'), got "
                        f"{dimension_numbers!r}.")
    for i, spec in enumerate(dimension_numbers):
        if len(spec) != len(lhs_shape):
            raise TypeError(f"convolution dimension_numbers[{i}] = {spec!r} must have one "
                            f"letter per dim of the operands, of rank {len(lhs_shape)}.")
    return ConvDimensionNumbers(*_letters_to_dims(*dimension_numbers))


def _letters_to_dims(lhs: str, rhs: str, out: str) -> tuple[tuple[int, ...], ...]:
    specs = []
    for i, (spec, pair) in enumerate(zip((lhs, rhs, out), ("NC", "OI", "NC"))):
        if spec.count(pair[0]) != 1 or spec.count(pair[1]) != 1 or len(set(spec)) != len(spec):
            raise TypeError(f"convolution dimension_numbers[{i}] = {spec!r} must hold "
                            f"'{pair[0]}' and '{pair[1]}' once each, and no letter twice.")
        specs.append((spec.index(pair[0]), spec.index(pair[1])))
    spatial = [c for c in rhs if c not in "OI"]
    if not set(lhs) - set("NC") == set(spatial) == set(out) - set("NC"):
        raise TypeError(f"convolution dimension_numbers {(lhs, rhs, out)} must name the same "
                        f"spatial dims in all three.")
    return tuple(pair + tuple(spec.index(c) for c in spatial)
                 for pair, spec in zip(specs, (lhs, rhs, out)))


def _take(shape: Shape, spec: Sequence[int]) -> Shape:
    return tuple(shape[d] for d in spec)


def conv_shape(lhs_shape: Shape, rhs_shape: Shape, *, window_strides, padding, lhs_dilation,
               rhs_dilation, dimension_numbers, feature_group_count,
               batch_group_count) -> Shape:
    """The result's shape; raises on operands the convolution cannot take."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    n, c, *space = _take(lhs_shape, lhs_spec)
    o, i, *window = _take(rhs_shape, rhs_spec)
    _check_groups(n, c, o, i, feature_group_count, batch_group_count)
    for name, value in (("window_strides", window_strides), ("padding", padding),
                        ("lhs_dilation", lhs_dilation), ("rhs_dilation", rhs_dilation)):
        if len(value) != len(space):
            raise ValueError(f"conv_general_dilated: {name} {tuple(value)} must have one "
                             f"entry per spatial dim ({len(space)}).")
    if any(s < 1 for s in (*window_strides, *lhs_dilation, *rhs_dilation)):
        raise ValueError("conv_general_dilated: window_strides, lhs_dilation and rhs_dilation "
                         "must be positive.")
    spatial = window_out_shape(space, window, window_strides, padding, lhs_dilation,
                               rhs_dilation)
    return _placed((n // batch_group_count, o, *spatial), out_spec)


def _check_groups(n, c, o, i, feature_groups, batch_groups) -> None:
    problem = None
    if feature_groups < 1 or batch_groups < 1:
        problem = "feature_group_count and batch_group_count must be at least 1"
    elif feature_groups > 1 and batch_groups > 1:
        problem = "at most one of feature_group_count and batch_group_count may exceed 1"
    elif c % feature_groups or c // feature_groups != i:
        problem = (f"the lhs feature dim ({c}) must be feature_group_count ({feature_groups}) "
                   f"times the rhs input feature dim ({i})")
    elif o % feature_groups or o % batch_groups:
        problem = (f"the rhs output feature dim ({o}) must divide by feature_group_count "
                   f"({feature_groups}) and batch_group_count ({batch_groups})")
    elif n % batch_groups:
        problem = f"the lhs batch dim ({n}) must divide by batch_group_count ({batch_groups})"
    if problem:
        raise ValueError(f"conv_general_dilated: {problem}.")

# ------------------------------------------------------------------------------------------
# The primitive
# ------------------------------------------------------------------------------------------


conv_general_dilated_p = Primitive("conv_general_dilated")
def conv_general_dilated(lhs, rhs, window_strides: Shape,
                         padding: str | Sequence[tuple[int, int]],
                         lhs_dilation: Shape | None = None, rhs_dilation: Shape | None = None,
                         dimension_numbers=None, feature_group_count: int = 1,
                         batch_group_count: int = 1, precision=None,
                         preferred_element_type=None, out_sharding=None):
    """``lax.conv_general_dilated`` (see the module docstring). ``padding`` is ``'SAME'``,
    ``'SAME_LOWER'``, ``'VALID'`` or one ``(low, high)`` per spatial dim; a string is
    resolved on the undilated lhs and the dilated kernel, as in JAX. ``precision`` is
    kept as a param and unused (NumPy computes in the operands' dtype); ``out_sharding`` must
    be None (the result is laid out as the lhs batch is).

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> from stage1_autodiff import lax
        >>> x, k = jnp.arange(5.0).reshape(1, 1, 5), jnp.ones((1, 1, 3))
        >>> lax.conv_general_dilated(x, k, (1,), "SAME")
        Array([[[1., 3., 6., 9., 7.]]], dtype=float32)
    """
    if out_sharding is not None:
        raise NotImplementedError("conv_general_dilated: out_sharding is not supported; the "
                                  "result keeps the lhs's batch split (reshard it after).")
    lhs_aval, rhs_aval = get_aval(lhs), get_aval(rhs)
    dn = conv_dimension_numbers(lhs_aval.shape, rhs_aval.shape, dimension_numbers)
    nspace = len(lhs_aval.shape) - 2
    rhs_dilation = tuple(rhs_dilation or (1,) * nspace)
    lhs_dilation = tuple(lhs_dilation or (1,) * nspace)
    if isinstance(padding, str):
        if any(d != 1 for d in lhs_dilation):
            raise ValueError("conv_general_dilated: string padding is not implemented with "
                             "lhs_dilation (a transposed convolution): give (low, high) pairs, "
                             "or use lax.conv_transpose.")
        window = [dilate_dim(k, r) for k, r in zip(_take(rhs_aval.shape, dn.rhs_spec)[2:],
                                                   rhs_dilation)]
        padding = padtype_to_pads(_take(lhs_aval.shape, dn.lhs_spec)[2:], window,
                                  window_strides, padding)
    if lhs_aval.dtype != rhs_aval.dtype:
        raise TypeError(f"conv_general_dilated requires lhs and rhs of one dtype, got "
                        f"{lhs_aval.dtype} and {rhs_aval.dtype}.")
    params = dict(window_strides=tuple(window_strides),
                  padding=tuple((int(lo), int(hi)) for lo, hi in padding),
                  lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation, dimension_numbers=dn,
                  feature_group_count=int(feature_group_count),
                  batch_group_count=int(batch_group_count))
    conv_shape(lhs_aval.shape, rhs_aval.shape, **params)  # errors here, at the call
    return conv_general_dilated_p.bind(
        lhs, rhs, **params, precision=precision, out_sharding=None,
        preferred_element_type=None if preferred_element_type is None
        else dtypes.canonicalize_dtype(preferred_element_type))


def conv_impl(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
              dimension_numbers, feature_group_count, batch_group_count, precision,
              preferred_element_type, out_sharding):
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    dtype = np.dtype(preferred_element_type or lhs.dtype)
    x = dilate_and_pad(np.transpose(lhs, lhs_spec).astype(dtype), 0, lhs_dilation, padding, 2)
    w = np.transpose(rhs, rhs_spec).astype(dtype)
    patches = windows_view(x, w.shape[2:], window_strides, rhs_dilation, 2)
    out = _grouped_product(patches, w, feature_group_count, batch_group_count)
    return np.ascontiguousarray(np.transpose(out, np.argsort(out_spec)))
impl_rules[conv_general_dilated_p] = conv_impl


def _grouped_product(patches: np.ndarray, w: np.ndarray, fgc: int, bgc: int) -> np.ndarray:
    """NumPy: ``patches`` (N, C, *positions, *window) times the kernel ``w`` (O, I, *window),
    group by group, as one batched matrix product; the result (N / bgc, O, *positions)."""
    n, c = patches.shape[:2]
    o, nspace = w.shape[0], w.ndim - 2
    positions = patches.shape[2:2 + nspace]
    groups = fgc * bgc  # one of the two is 1
    x = patches.reshape(bgc, n // bgc, fgc, c // fgc, *patches.shape[2:])
    # (group, batch, positions) rows against (input feature, window) columns
    x = np.moveaxis(x, 2, 1).reshape(groups, n // bgc, c // fgc, *patches.shape[2:])
    x = np.moveaxis(x, 2, 2 + nspace).reshape(groups, (n // bgc) * math.prod(positions), -1)
    k = w.reshape(groups, o // groups, -1).transpose(0, 2, 1)
    COORDINATOR.coordinate()  # as before any matrix product (threads.py)
    out = np.matmul(x, k).reshape(groups, n // bgc, *positions, o // groups)
    out = out.transpose(1, 0, nspace + 2, *range(2, nspace + 2))  # (batch, group, o/g, pos)
    return out.reshape(n // bgc, o, *positions)


def conv_vjp(ct, lhs, rhs, *, out, needs=(True, True), **params):
    if not dtypes.is_float(get_aval(lhs).dtype):
        return [None, None]
    return [_lhs_transpose(ct, lhs, rhs, **params) if needs[0] else None,
            _rhs_transpose(ct, lhs, rhs, **params) if needs[1] else None]
vjp_rules[conv_general_dilated_p] = conv_vjp
vjp_rules_take_needs.add(conv_general_dilated_p)
jvp_rules[conv_general_dilated_p] = defjvp(
    conv_general_dilated_p,
    lambda lhs_dot, lhs, rhs, *, out, **params: conv_general_dilated_p.bind(lhs_dot, rhs,
                                                                           **params),
    lambda rhs_dot, lhs, rhs, *, out, **params: conv_general_dilated_p.bind(lhs, rhs_dot,
                                                                           **params))


def _swap(spec: tuple[int, ...]) -> tuple[int, ...]:
    """The same spec with its first two roles exchanged (batch <-> feature, out <-> in)."""
    return (spec[1], spec[0], *spec[2:])


def _lhs_transpose(ct, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                   dimension_numbers, feature_group_count, batch_group_count, precision,
                   preferred_element_type, out_sharding):
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    groups = feature_group_count * batch_group_count
    # The kernel read backwards, its features swapped; each group's output features become
    # the transposed convolution's input features, so the groups move to the other dim.
    kernel = rev(rhs, rhs_spec[2:])
    if groups > 1:
        kernel = move_major(kernel, rhs_spec[0], rhs_spec[1], groups)
    pads = transpose_padding(_take(get_aval(lhs).shape, lhs_spec)[2:],
                             _take(get_aval(rhs).shape, rhs_spec)[2:], window_strides,
                             _take(get_aval(ct).shape, out_spec)[2:], padding, lhs_dilation,
                             rhs_dilation)
    ct_lhs = conv_general_dilated_p.bind(
        ct, kernel, window_strides=lhs_dilation, padding=pads, lhs_dilation=window_strides,
        rhs_dilation=rhs_dilation,
        dimension_numbers=ConvDimensionNumbers(out_spec, _swap(rhs_spec), lhs_spec),
        feature_group_count=groups, batch_group_count=1, precision=precision,
        preferred_element_type=preferred_element_type, out_sharding=None)
    if batch_group_count > 1:  # the groups came out as features: they are batches
        ct_lhs = move_major(ct_lhs, lhs_spec[1], lhs_spec[0], batch_group_count)
    return _as_dtype(ct_lhs, get_aval(lhs).dtype)


def _rhs_transpose(ct, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                   dimension_numbers, feature_group_count, batch_group_count, precision,
                   preferred_element_type, out_sharding):
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    window = _take(get_aval(rhs).shape, rhs_spec)[2:]
    space = _take(get_aval(lhs).shape, lhs_spec)[2:]
    ct_space = _take(get_aval(ct).shape, out_spec)[2:]
    # Padding: the original low one; high, whatever gives one result per kernel tap.
    pads = tuple((lo, dilate_dim(k, r) - 1 - lo + dilate_dim(m, s) - dilate_dim(n, d))
                 for (lo, _), k, r, m, s, n, d in zip(padding, window, rhs_dilation, ct_space,
                                                      window_strides, space, lhs_dilation))
    ct_rhs = conv_general_dilated_p.bind(
        lhs, ct, window_strides=rhs_dilation, padding=pads, lhs_dilation=lhs_dilation,
        rhs_dilation=window_strides,
        dimension_numbers=ConvDimensionNumbers(_swap(lhs_spec), _swap(out_spec),
                                               _swap(rhs_spec)),
        feature_group_count=batch_group_count, batch_group_count=feature_group_count,
        precision=precision, preferred_element_type=preferred_element_type,
        out_sharding=get_aval(rhs).sharding)  # (stage 4) the batch, now contracted, may be split
    return _as_dtype(ct_rhs, get_aval(rhs).dtype)


def _as_dtype(x, dtype):
    dtype = np.dtype(dtype)
    return x if get_aval(x).dtype == dtype else convert_element_type(x, dtype)


def move_major(x, src: int, dst: int, groups: int):
    """Dim ``src`` of ``x``, of size ``groups * m`` (group-major), becomes size ``m``; dim
    ``dst`` grows by the factor ``groups``, the groups its major part. Both keep their
    places. (``vmap``'s rule for convolutions moves batch dims the same way.)"""
    shape = list(get_aval(x).shape)
    split = shape[:src] + [groups, shape[src] // groups] + shape[src + 1:]
    x = reshape(x, split)
    target = dst + (dst > src)  # dst's place once src is split
    order = [a for a in range(len(split)) if a != src]
    order.insert(order.index(target), src)
    x = transpose(x, order)
    merged = [split[a] for a in order]
    at = order.index(src)
    return reshape(x, merged[:at] + [merged[at] * merged[at + 1]] + merged[at + 2:])


def _patches(x, window: Shape, strides: Shape, padding, lhs_dilation: Shape,
             rhs_dilation: Shape):
    """``x`` (batch, feature, *space) at every tap of every window position, as one array
    (batch, *positions, feature, tap): a ``pad`` (dilation and the non-negative padding), then
    one ``gather``, whose indices (``iota`` arithmetic, which the kernel fuses into the
    gather's loop) name each tap's element at each position. One gather rather than a strided
    slice per tap: a compiled program holds one loop nest for it, where a weight gradient's
    window (the output's spatial size) made 64 loop nests, and minutes of compiling."""
    (n, c, *space), nsp = get_aval(x).shape, len(window)
    if not nsp:
        return reshape(x, (n, c, 1))
    padded = pad_for_windows(x, 0, padding, lhs_dilation, 2)
    out = window_out_shape(space, window, strides, padding, lhs_dilation, rhs_dilation)
    grid = (*out, *window)

    def coordinate(d: int, lo: int, r: int, s: int):  # (*out, *window, 1): one index each
        at = add(full(grid, max(-lo, 0), np.int32),
                 add(mul(iota(np.int32, grid, d), full(grid, s, np.int32)),
                     mul(iota(np.int32, grid, nsp + d), full(grid, r, np.int32))))
        return reshape(at, (*grid, 1))
    indices = concatenate([coordinate(d, lo, r, s) for d, ((lo, _), r, s)
                           in enumerate(zip(padding, rhs_dilation, strides))], len(grid))
    indices = reshape(indices, (*out, math.prod(window), nsp))
    spatial = tuple(range(2, 2 + nsp))
    numbers = GatherDimensionNumbers(offset_dims=(0, 1 + nsp), collapsed_slice_dims=spatial,
                                     start_index_map=spatial)
    return gather(padded, indices, numbers, (n, c, *(1,) * nsp),
                  mode=GatherScatterMode.PROMISE_IN_BOUNDS)


def conv_by_patches(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                    dimension_numbers, feature_group_count, batch_group_count, precision,
                    preferred_element_type, out_sharding):
    """The convolution from stage 1's primitives, for a backend with no rule of its own:
    im2col, as the NumPy impl. The lhs in canonical order becomes its patches, (batch,
    *positions, feature * tap), and one ``dot_general`` contracts them with the kernel: a
    plain matrix product when there is one group, which stage 2 hands to BLAS; with the group
    as a batch dim otherwise."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    dtype = preferred_element_type or get_aval(lhs).dtype
    x = _as_dtype(transpose(lhs, lhs_spec), dtype)
    w = _as_dtype(transpose(rhs, rhs_spec), dtype)
    (n, *_), (o, i, *window) = get_aval(x).shape, get_aval(w).shape
    fgc, bgc = feature_group_count, batch_group_count
    groups, k, nsp, nb = fgc * bgc, math.prod(window), len(window), n // bgc
    patches = _patches(x, window, window_strides, padding, lhs_dilation, rhs_dilation)
    positions = get_aval(patches).shape[1:1 + nsp]
    if groups == 1:
        rows = reshape(patches, (n, *positions, i * k))
        out = dot_general(rows, reshape(w, (o, i * k)), (((nsp + 1,), (1,)), ((), ())))
    else:  # (bgc, batch / bgc, *positions, fgc, i * k) -> (group, batch / bgc, ..., i * k)
        split = reshape(patches, (bgc, nb, *positions, fgc, i * k))
        rows = reshape(transpose(split, (0, 2 + nsp, 1, *range(2, 2 + nsp), 3 + nsp)),
                       (groups, nb, *positions, i * k))
        kernel = reshape(w, (groups, o // groups, i * k))
        out = dot_general(rows, kernel, (((nsp + 2,), (2,)), ((0,), (0,))))
        out = reshape(transpose(out, (1, *range(2, 2 + nsp), 0, 2 + nsp)), (nb, *positions, o))
    out = transpose(out, (0, nsp + 1, *range(1, nsp + 1)))  # (batch, o, *positions)
    return transpose(out, tuple(np.argsort(out_spec)))

# ------------------------------------------------------------------------------------------
# The convenience wrappers of jax.lax
# ------------------------------------------------------------------------------------------


def conv(lhs, rhs, window_strides: Shape, padding: str, precision=None,
         preferred_element_type=None):
    """``lax.conv``: ``conv_general_dilated`` in ``NCHW``/``OIHW`` order, no dilation."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs, rhs, window_strides: Shape, padding, lhs_dilation: Shape,
                              rhs_dilation: Shape, precision=None, preferred_element_type=None):
    """``lax.conv_with_general_padding``: ``conv_general_dilated`` in ``NCHW``/``OIHW``
    order."""
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                                precision=precision,
                                preferred_element_type=preferred_element_type)


_TRANSPOSE_LAYOUTS = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"),
                      4: ("NHWC", "HWIO", "NHWC"), 5: ("NHWDC", "HWDIO", "NHWDC")}


def conv_transpose(lhs, rhs, strides: Shape, padding, rhs_dilation: Shape | None = None,
                   dimension_numbers=None, transpose_kernel: bool = False, precision=None,
                   preferred_element_type=None, use_consistent_padding: bool = False):
    """``lax.conv_transpose``: the "deconvolution" of a strided convolution, a convolution
    of the lhs dilated by ``strides``. Default layout ``NHWC``/``HWIO`` (and its 1-D and 3-D
    forms). ``'SAME'`` makes ``n * stride`` results, ``'VALID'`` ``n * stride + max(k -
    stride, 0)``. With ``transpose_kernel`` the kernel is reversed and its features
    swapped: exactly the lhs transpose of a ``conv_general_dilated`` with that kernel.
    ``(low, high)`` pairs pad the dilated lhs, unless ``use_consistent_padding``, when they
    are the forward convolution's padding, as strings always are.

    Example:
        >>> import stage1_autodiff.numpy as jnp
        >>> from stage1_autodiff import lax
        >>> lax.conv_transpose(jnp.ones((1, 3, 1)), jnp.ones((2, 1, 1)), (2,), "SAME").shape
        (1, 6, 1)
    """
    ndim = get_aval(lhs).ndim
    if dimension_numbers is None:
        if ndim not in _TRANSPOSE_LAYOUTS:
            raise ValueError(f"conv_transpose has default dimension_numbers for operands of "
                             f"rank 2 to 5 only, got rank {ndim}; pass dimension_numbers.")
        dimension_numbers = _TRANSPOSE_LAYOUTS[ndim]
    dn = conv_dimension_numbers(get_aval(lhs).shape, get_aval(rhs).shape, dimension_numbers)
    rhs_dilation = tuple(rhs_dilation or (1,) * (ndim - 2))
    if isinstance(padding, str) or use_consistent_padding:
        window = [dilate_dim(k, r) for k, r in zip(_take(get_aval(rhs).shape, dn.rhs_spec)[2:],
                                                   rhs_dilation)]
        each = [padding] * len(window) if isinstance(padding, str) else padding
        padding = [_transpose_pads(k, s, p) for k, s, p in zip(window, strides, each)]
    if transpose_kernel:
        rhs = move_axis_swap(rev(rhs, dn.rhs_spec[2:]), dn.rhs_spec[0], dn.rhs_spec[1])
    return conv_general_dilated(lhs, rhs, (1,) * (ndim - 2), padding, strides, rhs_dilation,
                                dn, precision=precision,
                                preferred_element_type=preferred_element_type)


def _transpose_pads(k: int, s: int, padding) -> tuple[int, int]:
    """Pads of the dilated lhs: ``k - 1`` each side gives the "full" correlation, of
    ``(n - 1) * s + k`` results; SAME trims it to ``n * s``, VALID to ``n * s + max(k - s, 0)``,
    and a forward padding ``(lo, hi)`` trims ``lo`` and ``hi``."""
    if not isinstance(padding, str):
        return k - 1 - padding[0], k - 1 - padding[1]
    if padding == "SAME":
        total = k + s - 2
        before = k - 1 if s > k - 1 else -(-total // 2)
    elif padding == "VALID":
        total = k + s - 2 + (k - s if k > s else 0)
        before = k - 1
    else:
        raise ValueError(f"conv_transpose: padding must be 'SAME', 'VALID' or (low, high) "
                         f"pairs, got {padding!r}.")
    return before, total - before


def move_axis_swap(x, a: int, b: int):
    order = list(range(get_aval(x).ndim))
    order[a], order[b] = order[b], order[a]
    return transpose(x, order)

# ------------------------------------------------------------------------------------------
# Result shapes without operands, as jax.lax exports them (stax's layers use them)
# ------------------------------------------------------------------------------------------


def conv_shape_tuple(lhs_shape: Shape, rhs_shape: Shape, strides: Shape, pads,
                     batch_group_count: int = 1) -> Shape:
    """The result shape of a convolution of operands in ``NCHW``/``OIHW`` order, for
    ``pads`` a padding name or ``(low, high)`` pairs.

    Example:
        >>> conv_shape_tuple((1, 3, 8, 8), (16, 3, 3, 3), (2, 2), "SAME")
        (1, 16, 4, 4)
    """
    space, window = tuple(lhs_shape[2:]), tuple(rhs_shape[2:])
    if isinstance(pads, str):
        pads = padtype_to_pads(space, window, strides, pads)
    if len(pads) != len(space):
        raise TypeError(f"Wrong number of explicit pads for convolution: expected "
                        f"{len(space)}, one (low, high) pair per spatial dim, got {len(pads)}.")
    if any(n + lo + hi < 0 for n, (lo, hi) in zip(space, pads)):
        raise ValueError(f"Negative padding is larger than the dim it pads: padding "
                         f"{tuple(pads)} of spatial dims {space}.")
    ones = (1,) * len(space)
    out = window_out_shape(space, window, strides, pads, ones, ones)
    return (int(lhs_shape[0]) // batch_group_count, int(rhs_shape[0]), *out)


def conv_general_shape_tuple(lhs_shape: Shape, rhs_shape: Shape, window_strides: Shape,
                             padding, dimension_numbers) -> Shape:
    """:func:`conv_shape_tuple` for operands laid out as ``dimension_numbers`` says.

    Example:
        >>> conv_general_shape_tuple((1, 8, 8, 3), (3, 3, 3, 16), (1, 1), "SAME",
        ...                          ("NHWC", "HWIO", "NHWC"))
        (1, 8, 8, 16)
    """
    dn = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
    canonical = conv_shape_tuple(_take(lhs_shape, dn.lhs_spec), _take(rhs_shape, dn.rhs_spec),
                                 window_strides, padding)
    return _placed(canonical, dn.out_spec)


def conv_transpose_shape_tuple(lhs_shape: Shape, rhs_shape: Shape, window_strides: Shape,
                               padding, dimension_numbers) -> Shape:
    """The result shape of :func:`conv_transpose` (``(low, high)`` pairs pad the dilated
    lhs, as there).

    Example:
        >>> conv_transpose_shape_tuple((1, 8, 8, 3), (3, 3, 3, 16), (2, 2), "VALID",
        ...                            ("NHWC", "HWIO", "NHWC"))
        (1, 17, 17, 16)
    """
    dn = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
    (n, _, *space), (o, _, *window) = _take(lhs_shape, dn.lhs_spec), _take(rhs_shape, dn.rhs_spec)
    if isinstance(padding, str):
        padding = [_transpose_pads(k, s, padding) for k, s in zip(window, window_strides)]
    out = [(i - 1) * s - k + 2 + lo + hi
           for i, k, s, (lo, hi) in zip(space, window, window_strides, padding)]
    return _placed((n, o, *out), dn.out_spec)


def _placed(canonical: Shape, spec: Sequence[int]) -> Shape:
    out = [0] * len(canonical)
    for d, size in zip(spec, canonical):
        out[d] = int(size)
    return tuple(out)


# What ``dimension_numbers`` may be, named as JAX names the type.
ConvGeneralDilatedDimensionNumbers = tuple[str, str, str] | ConvDimensionNumbers | None


def conv_general_dilated_patches(lhs, filter_shape: Shape, window_strides: Shape,
                                 padding: str | Sequence[tuple[int, int]],
                                 lhs_dilation: Shape | None = None,
                                 rhs_dilation: Shape | None = None,
                                 dimension_numbers: ConvGeneralDilatedDimensionNumbers = None,
                                 precision=None, preferred_element_type=None):
    """Every window of ``lhs`` that a convolution with a kernel of spatial shape
    ``filter_shape`` would read, laid out as features: ``C * prod(filter_shape)`` of them,
    each input feature's taps together (feature-major). It is that convolution, with a
    kernel that copies each tap of each feature to an output feature of its own (a one-hot
    kernel, one group per input feature), so it differentiates and compiles as a
    convolution does.

    Example:
        >>> import stage1_autodiff as jax, stage1_autodiff.numpy as jnp
        >>> x = jnp.arange(6.0).reshape(1, 1, 2, 3)
        >>> jax.lax.conv_general_dilated_patches(x, (1, 2), (1, 1), "VALID")[0, :, 0]
        Array([[0., 1.],
               [1., 2.]], dtype=float32)
    """
    shape = get_aval(lhs).shape
    filter_shape = tuple(filter_shape)
    dn = conv_dimension_numbers(shape, (1, 1, *filter_shape), dimension_numbers)
    features, taps = shape[dn.lhs_spec[1]], math.prod(filter_shape)
    one_hot = convert_element_type(eq(iota(np.int32, (taps, taps), 0),
                                      iota(np.int32, (taps, taps), 1)), get_aval(lhs).dtype)
    kernel = reshape(broadcast_in_dim(one_hot, (features, taps, taps), (1, 2)),
                     (features * taps, 1, *filter_shape))  # (out, in, *spatial)
    kernel = transpose(kernel, tuple(int(d) for d in np.argsort(dn.rhs_spec)))
    return conv_general_dilated(lhs, kernel, window_strides, padding, lhs_dilation,
                                rhs_dilation, dn, feature_group_count=features,
                                precision=precision,
                                preferred_element_type=preferred_element_type)
