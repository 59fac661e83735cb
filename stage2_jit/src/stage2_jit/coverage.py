"""What each backend does not generate, each with its reason: a program that uses one of
these primitives runs elsewhere (on the interpreter backend instead of the CPU's kernels; on
the host instead of the GPU). ``tests/stage2/test_codegen_coverage.py`` checks that every
primitive of stages 1 and 2 has a rule in each backend or is listed here.

NB: XLA has no such list: every HLO instruction has an emitter on every backend, and what is
not an instruction is a custom call into a library (LAPACK, cuSOLVER, ducc's FFT).
"""

from __future__ import annotations

from stage1_autodiff.complex_numbers import COMPLEX_PRIMITIVES
from stage1_autodiff.core import Primitive
from stage1_autodiff.fft import fft_p

from stage1_autodiff import linalg, random_distributions
from stage1_autodiff import prims as p

from .callback import io_callback_p, pure_callback_p
from .debug import debug_print_p

# --8<-- [start:cpu_coverage]
# Primitives the CPU backend does not generate, each with its reason: a program that uses one
# runs on the interpreter backend instead (a test checks that every primitive of stages 1
# and 2 has a rule or is listed here).
CPU_FALLBACK: dict[Primitive, str] = {
    **dict.fromkeys(COMPLEX_PRIMITIVES, "complex values: the elementwise rules and kernel_math's "
                    "intrinsics are written for real numbers (KernelWriter.DTYPES), so a "
                    "program with a complex value runs on the interpreter"),
    fft_p: "NumPy's pocketfft is not callable from Numba, and a hand-written FFT kernel is "
           "not yet written; the interpreter calls NumPy's",
    p.polygamma_p: "its Hurwitz zeta sum takes a number of terms that depends on each element "
                   "(and on m), not yet written as a kernel_math function; NumPy's impl runs",
    **dict.fromkeys(p.SPECIAL_FUNCTIONS, "SciPy's igamma, betainc, zeta and Bessel functions "
                    "(series and continued fractions of data-dependent length) are not yet "
                    "written as kernel_math functions; NumPy's impl calls SciPy's"),
    p.reduce_precision_p: "its rounding on the bits (special.reduce_precision_impl) is not yet "
                          "written as a kernel_math function; NumPy's impl runs",
    p.top_k_p: "a partial sort of each line (a selection of the k largest, NaN first, ties in "
               "index order), not yet written as a loop rule; NumPy's impl runs",
    debug_print_p: "an effect (printing on every call), which a compiled kernel cannot do",
    pure_callback_p: "a call of a Python function, which a compiled kernel cannot make; the "
                     "interpreter calls it with NumPy arrays",
    io_callback_p: "a call of a Python function for its effect, which a compiled kernel "
                   "cannot make; the interpreter calls it, once per call",
    **dict.fromkeys(random_distributions.RANDOM_LOOPS,
                    "rejection loops whose step count depends on the numbers drawn (and, for "
                    "the gamma gradient, a series whose length depends on x); NumPy's impl runs"),
    **dict.fromkeys(linalg.LINALG, "a factorization or solve per matrix (LAPACK's potrf, "
                    "geqrf, syevd, gesdd; getrf and trsm as substitution loops), not a loop nest "
                    "to fuse; the interpreter runs NumPy's, which a kernel would only re-wrap"),
}
# --8<-- [end:cpu_coverage]


# No CUDA rule, each with its reason: a program with one of these runs on the host
# (its arrays copied there and back); a test checks every primitive is covered or listed.
CUDA_MISSING: dict[Primitive, str] = {
    **dict.fromkeys(COMPLEX_PRIMITIVES, "complex values: the kernels compute in real dtypes "
                    "only (KernelWriter.DTYPES); runs on the host"),
    fft_p: "cuFFT is not exposed by numba-cuda, and a hand-written FFT kernel is not yet "
           "written; NumPy's pocketfft runs on the host",
    p.digamma_p: "its recurrence and asymptotic series are written for the CPU only "
                 "(kernel_math.digamma_f64); CUDA has no digamma in its math module",
    p.polygamma_p: "its Hurwitz zeta sum takes a number of terms that depends on each "
                   "element; not yet written for either backend",
    **dict.fromkeys(p.SPECIAL_FUNCTIONS, "SciPy's igamma, betainc, zeta and Bessel functions "
                    "are not yet written for either backend; they run on the host"),
    p.nextafter_p: "numba-cuda's math module has no nextafter, and the bit arithmetic it "
                   "needs is not yet written for CUDA",
    p.reduce_precision_p: "its rounding on the bits is not yet written for either backend; "
                          "runs on the host",
    p.sort_p: "a sort of each line needs a parallel sorting network (bitonic or radix), not "
              "yet written; the CPU backend calls NumPy's argsort",
    p.top_k_p: "a selection of the k largest of each line needs a parallel sort or a "
               "per-thread heap, not yet written; runs on the host",
    debug_print_p: "an effect (printing on every call), which a kernel cannot do",
    pure_callback_p: "a call of a Python function, which a kernel cannot make; the host "
                     "calls it with NumPy arrays",
    io_callback_p: "a call of a Python function for its effect, which a kernel cannot make; "
                   "the host calls it, once per call",
    p.cbrt_p: "numba-cuda has no cube root in its math module (libdevice's cbrtf is not "
              "exposed the same way under the simulator), and pow(x, 1/3) is not exact",
    **dict.fromkeys(linalg.LINALG, "a matrix decomposition or triangular solve per matrix: "
                    "cuSOLVER's work, which numba-cuda does not expose, and a hand-written "
                    "kernel would be a solver library of its own; runs on the host's NumPy"),
    **dict.fromkeys(random_distributions.RANDOM_LOOPS,
                    "rejection loops whose step count depends on the numbers drawn; not yet "
                    "written as kernels, so NumPy's impl runs on the host"),
}
