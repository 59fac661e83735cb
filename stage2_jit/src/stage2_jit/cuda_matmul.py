"""The CUDA backend's float matrix product: a tiled kernel with register blocking, written
by ``emit_matmul`` for ``codegen_cuda.CudaWriter`` (its ``_emit_dot`` decides which products
take it: ``tiled_matmul_layout``)."""

from __future__ import annotations

from typing import Any

from .jaxpr import JaxprEqn
from .kernel_writer import Kernel, indent, np_type, typed_constant


# --8<-- [start:emit_matmul]
def emit_matmul(writer: Any, eqn: JaxprEqn, comment: str) -> None:
    """A float matrix product (batched over a leading dim or not) as a tiled kernel:
    each block computes a BM x BN tile of the result. Step by step along the contracted
    dim, the block's threads copy a BM x BK tile of x and a BK x BN tile of y into shared
    memory (neighbouring threads reading neighbouring addresses), then each thread
    multiplies them into its own TM x TN outputs, held in registers (register blocking:
    TM + TN shared-memory reads feed TM * TN multiply-adds)."""
    x, y = eqn.invars
    out = eqn.outvars[0]
    x_rows_first, y_rows_first, batched = tiled_matmul_layout(eqn)
    bm, bn, bk, tm, tn = matmul_tiles()
    tx, ty = bn // tn, bm // tm
    dtype, real = out.aval.dtype, np_type(out.aval.dtype)
    b = (0,) if batched else ()
    name = writer._name_of(out)
    a_name, b_name = writer._array(x), writer._array(y)
    m = writer.dim(x, len(b) + (0 if x_rows_first else 1))
    k = writer.dim(x, len(b) + (1 if x_rows_first else 0))
    n = writer.dim(y, len(b) + (1 if y_rows_first else 0))
    z = ["batch"] if batched else []

    def at(array: str, first: str, second: str) -> str:
        return f"{array}[{', '.join([*z, first, second])}]"

    acc = [[f"c{i}_{j}" for j in range(tn)] for i in range(tm)]
    zero = typed_constant(0, dtype)
    body = [comment, *(f"d{i} = dims[{i}]" for i in range(len(writer.dims))),
            f"m, n, kk = np.int64({m}), np.int64({n}), np.int64({k})",
            f"x_tile = cuda.shared.array(({bk}, {bm}), {real})  # [k, row]",
            f"y_tile = cuda.shared.array(({bk}, {bn}), {real})  # [k, col]",
            "tx, ty = cuda.threadIdx.x, cuda.threadIdx.y",
            f"tid = ty * {tx} + tx",
            f"row0 = np.int64(cuda.blockIdx.y) * {bm}",
            f"col0 = np.int64(cuda.blockIdx.x) * {bn}",
            *(["batch = np.int64(cuda.blockIdx.z)"] if batched else []),
            *(f"{c} = {typed_constant(0, dtype)}" for row in acc for c in row),
            f"for k0 in range(np.int64(0), kk, {bk}):",
            *indent([*tile_load("x_tile", at(a_name, "gr", "gc") if x_rows_first else
                                  at(a_name, "gc", "gr"), bm, bk, ("row0", "k0"),
                                  ("m", "kk"), x_rows_first, True, tx * ty, zero),
                      *tile_load("y_tile", at(b_name, "gr", "gc") if y_rows_first else
                                  at(b_name, "gc", "gr"), bk, bn, ("k0", "col0"),
                                  ("kk", "n"), y_rows_first, False, tx * ty, zero),
                      "cuda.syncthreads()",
                      f"for k in range({bk}):",
                      *indent([*(f"a{i} = x_tile[k, ty * {tm} + {i}]" for i in range(tm)),
                                *(f"b{j} = y_tile[k, tx + {j * tx}]" for j in range(tn)),
                                *(f"{acc[i][j]} += a{i} * b{j}"
                                  for i in range(tm) for j in range(tn))]),
                      "cuda.syncthreads()"])]
    for i in range(tm):
        body += [f"gr = row0 + ty * {tm} + {i}",
                 "if gr < m:",
                 *indent([line for j in range(tn) for line in (
                     f"gc = col0 + tx + {j * tx}",
                     "if gc < n:",
                     f"    {at(name, 'gr', 'gc')} = {acc[i][j]}")])]
    kernel = f"kernel{len(writer.kernels)}_{name}"
    params, arrays = writer._params({out})  # x, y (once if the same), the result
    lines = ["@cuda.jit(cache=True)", f"def {kernel}({', '.join(['dims', *params])}):",
             *indent(body)]
    writer.kernels.append(Kernel(kernel, params, arrays, lines, f"{m} * {n}"))
    shape = writer._shape(out)
    batches = writer.dim(x, 0) if batched else "1"
    writer.host += [f"{name} = device_array(({', '.join(shape)},), dtype={real})",
                  f"{kernel}[((max({n}, 1) + {bn - 1}) // {bn}, (max({m}, 1) + {bm - 1}) "
                  f"// {bm}, {batches}), ({tx}, {ty})]({', '.join(['dims', *params])})"]
# --8<-- [end:emit_matmul]


# --8<-- [start:matmul_tiles]
def matmul_tiles() -> tuple[int, int, int, int, int]:
    """(BM, BN, BK, TM, TN): a block's result tile, the contracted step, a thread's outputs.
    256 threads of 8 x 8 outputs each on a GPU; under the simulator, whose threads are OS
    threads, 4 threads of 2 x 2 (the same kernel source otherwise)."""
    from numba import config
    return (4, 4, 2, 2, 2) if config.ENABLE_CUDASIM else (128, 128, 8, 8, 8)


def tile_load(tile: str, read: str, rows: int, cols: int, origin: tuple[str, str],
               bounds: tuple[str, str], stored_first: bool, transposed: bool, threads: int,
               zero: str) -> list[str]:
    """Lines that copy a rows x cols tile, starting at ``origin`` in the logical matrix, into
    ``tile`` (stored [k, m] or [k, n]); the dim contiguous in memory varies fastest across
    threads, so a warp reads consecutive addresses (``read`` is the element at (gr, gc))."""
    fast = cols if stored_first else rows
    r, c = (f"e // {fast}", f"e % {fast}") if stored_first else (f"e % {fast}", f"e // {fast}")
    return [f"for e in range(tid, {rows * cols}, {threads}):",
            f"    r = {r}",
            f"    c = {c}",
            f"    gr = {origin[0]} + r",
            f"    gc = {origin[1]} + c",
            f"    {tile}{'[c, r]' if transposed else '[r, c]'} = {read} "
            f"if gr < {bounds[0]} and gc < {bounds[1]} else {zero}"]


def tiled_matmul_layout(eqn: JaxprEqn) -> tuple[bool, bool, bool] | None:
    """For a float matrix product (or a batch of them along dim 0), whether x is stored
    rows first ([m, k], not [k, m]), whether y is ([k, n], not [n, k]), and whether it is
    batched; None for any other dot_general."""
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    x, y = (a.aval for a in eqn.invars)
    batched = bool(lb)
    if lb not in ((), (0,)) or rb != lb or len(lc) != 1 or len(rc) != 1:
        return None
    if x.ndim != 2 + batched or y.ndim != 2 + batched or x.dtype != y.dtype:
        return None
    if x.dtype.kind != "f" or eqn.outvars[0].aval.dtype != x.dtype:
        return None
    first = len(lb)
    return lc[0] == first + 1, rc[0] == first, batched
# --8<-- [end:matmul_tiles]
