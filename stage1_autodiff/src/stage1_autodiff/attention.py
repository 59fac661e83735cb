"""``jax.nn.dot_product_attention``: softmax(q k^T * scale + bias), masked, times v, for each
head; one composition of ``einsum``, ``where`` and ``softmax``, so it differentiates through
theirs.

The letters name the dims, as in JAX: B batch, T query length, S key/value length, N query
heads, K key/value heads, G = N // K query heads per key/value head (grouped-query attention;
K == N is multi-head, K == 1 multi-query), H the size of one head.

NB: JAX's is in jax/_src/nn/functions.py (``_dot_product_attention_xla``), which vmaps a
one-group core over G; here the group is one more letter of the einsums. JAX's 'cudnn'
implementation calls cuDNN's fused kernel, which a NumPy library has no way to call.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import numpy as jnp
from .autodiff import stop_gradient
from .nn import logsumexp, softmax
from .numpy.promotion import as_value


def dot_product_attention(query: Any, key: Any, value: Any, bias: Any = None, mask: Any = None,
                          *, scale: float | None = None, is_causal: bool = False,
                          query_seq_lengths: Any = None, key_value_seq_lengths: Any = None,
                          local_window_size: int | tuple[int, int] | None = None,
                          implementation: str | None = None,
                          return_residual: bool = False) -> Any:
    """Scaled dot-product attention, ``softmax(q k^T / sqrt(H) + bias) v`` for each head.

    ``query`` is (B, T, N, H) or (T, N, H); ``key`` and ``value`` (B, S, K, H) or (S, K, H),
    with N a multiple of K. ``bias`` (added to the logits) and ``mask`` (True where a query
    may attend to a key) are 4-D, broadcastable to (B, N, T, S). ``is_causal`` lets query t
    see keys s <= t; ``local_window_size=(left, right)`` keys t - left <= s <= t + right; the
    sequence lengths (int32, shape (B,)) mask the padding past each sequence's end (a padded
    query's output row is 0). ``return_residual`` also returns the logsumexp of each row of
    logits, (B, T, N) or (T, N). Only ``implementation='xla'`` (or None) runs here.

    Example:
        >>> import stage1_autodiff as jax, stage1_autodiff.numpy as jnp
        >>> q = jnp.ones((1, 2, 1, 4))  # B=1, T=2, N=1, H=4
        >>> v = jnp.array([[[[1.0, 0, 0, 0]], [[0, 1.0, 0, 0]]]])
        >>> jax.nn.dot_product_attention(q, q, v, is_causal=True)[0, :, 0]
        Array([[1. , 0. , 0. , 0. ],
               [0.5, 0.5, 0. , 0. ]], dtype=float32)
    """
    if implementation == "cudnn":
        raise NotImplementedError(
            "dot_product_attention: implementation='cudnn' calls cuDNN's fused kernel on a "
            "GPU, which this NumPy library cannot; use implementation='xla' or None.")
    if implementation not in (None, "xla"):
        raise ValueError(f"Unsupported implementation option: {implementation}")
    output_shape = as_value(query).shape
    query, key, value = _as_4d(query), _as_4d(key), _as_4d(value)
    bias = None if bias is None else _as_4d(bias)
    mask = None if mask is None else _as_4d(mask)
    q_lengths = None if query_seq_lengths is None else as_value(query_seq_lengths)
    kv_lengths = None if key_value_seq_lengths is None else as_value(key_value_seq_lengths)
    if isinstance(local_window_size, int):
        local_window_size = (local_window_size, local_window_size)
    _check_arguments(query, key, value, bias, mask, q_lengths, kv_lengths)
    head_size = key.shape[-1]
    scale = 1.0 / np.sqrt(head_size) if scale is None else scale
    out, residual = _grouped_attention(query, key, value, bias, mask, scale, is_causal,
                                       q_lengths, kv_lengths, local_window_size, return_residual)
    out = jnp.reshape(out, output_shape)
    if return_residual:
        return out, jnp.reshape(residual, output_shape[:-1])
    return out


def _as_4d(x: Any) -> Any:
    """``x`` with unit dims in front up to 4 dims (a missing batch dim, say)."""
    x = as_value(x)
    missing = 4 - x.ndim
    return jnp.expand_dims(x, tuple(range(missing))) if missing > 0 else x


def _check(x: Any, name: str, shape: list[int], dtype: Any = None) -> None:
    """``x``'s rank, dtype and dims (-1: any) as required, or JAX's ValueError."""
    if x is None:
        return
    if x.ndim != len(shape):
        raise ValueError(f"{name} ndim should be {len(shape)}, but got {x.ndim}")
    if dtype is not None and x.dtype != dtype:
        raise ValueError(f"{name} dtype should be {dtype}, but got {x.dtype}")
    if any(want != -1 and got != want for got, want in zip(x.shape, shape)):
        raise ValueError(f"{name} shape should be {shape}: but got {x.shape}")


def _check_arguments(query, key, value, bias, mask, q_lengths, kv_lengths) -> None:
    batch, source, kv_heads, head_size = key.shape
    _check(value, "value", [batch, source, kv_heads, head_size], key.dtype)
    _check(query, "query", [batch, -1, -1, head_size], key.dtype)
    _check(mask, "mask", [-1] * 4, np.dtype(bool))
    _check(bias, "bias", [-1] * 4)
    _check(q_lengths, "query_seq_lengths", [batch], np.dtype(np.int32))
    _check(kv_lengths, "key_value_seq_lengths", [batch], np.dtype(np.int32))
    if query.shape[-2] % kv_heads != 0:
        raise ValueError(f"The number of query heads must be a multiple of key/value heads, "
                         f"but got {query.shape[-2]} vs {kv_heads}")


def _grouped(t: Any, kv_heads: int, groups: int) -> Any:
    """A (B, N or 1, T, S) bias or mask as (B, K or 1, G or 1, T, S), to broadcast against
    the grouped logits."""
    if t is None:
        return None
    b, n, rows, cols = t.shape
    if n == 1:
        return t[:, :, None]
    return jnp.reshape(t, (b, kv_heads, groups, rows, cols))


def _combined_mask(mask, is_causal, q_lengths, kv_lengths, window, rows, cols) -> Any:
    """Where a query may attend to a key, (B or 1, K or 1, G or 1, T, S); None if all."""
    combined = mask
    q_pos = jnp.arange(rows)[:, None]
    kv_pos = jnp.arange(cols)[None, :]
    pieces = []
    if is_causal:
        pieces.append(q_pos >= kv_pos)
    if window is not None:
        left, right = window
        pieces.append((q_pos <= kv_pos + left) & (q_pos >= kv_pos - right))
    if q_lengths is not None:
        pieces.append(q_pos < q_lengths[:, None, None])
    if kv_lengths is not None:
        pieces.append(kv_pos < kv_lengths[:, None, None])
    for piece in pieces:  # each (T, S) or (B, T, S): as (B or 1, 1, 1, T, S)
        piece = piece[:, None, None] if piece.ndim == 3 else piece
        combined = piece if combined is None else combined & piece
    return combined


def _large_negative(dtype: np.dtype) -> Any:
    """What a masked logit becomes: -0.7 times the largest float (of float32 at most, as the
    softmax runs in float32), so that a row with every key masked is uniform, not NaN."""
    largest = min(float(np.finfo(dtype).max), float(np.finfo(np.float32).max))
    return jnp.asarray(-0.7 * largest, dtype=dtype)


def _grouped_attention(query, key, value, bias, mask, scale, is_causal, q_lengths,
                       kv_lengths, window, return_residual) -> tuple[Any, Any]:
    """The attention of 4-D operands: (B, T, N, H) out, and the (B, T, N) logsumexps of the
    logits' rows if ``return_residual`` (else None)."""
    batch, rows, heads, head_size = query.shape
    kv_heads, cols = key.shape[2], key.shape[1]
    groups = heads // kv_heads
    query = jnp.reshape(query, (batch, rows, kv_heads, groups, head_size))
    logits_dtype = jnp.promote_types(query.dtype, np.dtype(np.float32))
    # NB: JAX asks the dot for float32 results (preferred_element_type); here the operands
    # are converted first, which gives the same products.
    logits = jnp.einsum("BTKGH,BSKH->BKGTS", query.astype(logits_dtype),
                        key.astype(logits_dtype))
    logits = logits * jnp.asarray(scale, dtype=logits_dtype)
    if bias is not None:
        logits = (logits + _grouped(bias, kv_heads, groups)).astype(logits_dtype)
    allowed = _combined_mask(_grouped(mask, kv_heads, groups), is_causal, q_lengths,
                             kv_lengths, window, rows, cols)
    if allowed is not None:
        logits = jnp.where(allowed, logits, _large_negative(logits_dtype))
    logits = logits.astype(np.float32)  # the softmax runs in float32, as JAX's
    probs = softmax(logits, axis=-1).astype(key.dtype)
    out = jnp.einsum("BKGTS,BSKH->BTKGH", probs, value)
    if q_lengths is not None:  # a padded query's row is 0
        padded = jnp.arange(rows)[None, :] < q_lengths[:, None]
        out = out * padded[:, :, None, None, None].astype(out.dtype)
    out = jnp.reshape(out, (batch, rows, heads, head_size))
    if not return_residual:
        return out, None
    residual = logsumexp(logits, axis=-1).astype(key.dtype)  # (B, K, G, T)
    residual = jnp.reshape(jnp.moveaxis(residual, -1, 1), (batch, rows, heads))
    return out, stop_gradient(residual)

