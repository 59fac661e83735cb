#!/usr/bin/env bash
# The GPU check of the stage-2 CUDA backend (issue 4): one prepared command for a lent GPU
# machine (see /work/.library/device/README.md), run from anywhere in the repository.
#
# That machine's Python 3.12 has NumPy 2.5, which numba-cuda cannot use, and no network. So,
# once, here, in the repository root, fetch a NumPy 2.4 wheel into .whl/ (ignored by git).
# NumPy 2.4's wheels are tagged manylinux_2_27/2_28, and pip matches --platform tags exactly:
# with manylinux2014_x86_64 alone it finds nothing newer than NumPy 2.2.
#
#   pip download --only-binary=:all: --python-version 3.12 --implementation cp \
#       --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
#       --platform manylinux2014_x86_64 --no-deps -d .whl "numpy==2.4.*"
#
# Then run it there with .whl carried, e.g. run(command="bash benchmarks/run_gpu_check.sh",
# carry=[".whl"], timeout_s=540). It installs the wheel into /tmp/site, prints the GPU, and
# runs benchmarks/bench_stage2_gpu.py within BENCH_TIMEOUT_S seconds (default 420), then
# benchmarks/bench_control_flow_gpu.py within LOOP_BENCH_TIMEOUT_S (default 120); the log
# is also written to $OUT/gpu_check.log when OUT is set.
#
# The tests in tests/stage2_cuda are not run here: they are written for Numba's CUDA
# simulator and skip without it. The benchmark checks every result against NumPy itself.

set -u -o pipefail
cd "$(dirname "$0")/.."

wheels=(.whl/numpy-2.4*.whl)
if [ ! -f "${wheels[0]}" ]; then
    echo "no .whl/numpy-2.4*.whl: fetch it as the top of $0 says, and carry .whl" >&2
    exit 1
fi
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site "${wheels[0]}" || exit 1
export PYTHONPATH=/tmp/site:stage1_autodiff/src:stage2_jit/src
export PYTHONUNBUFFERED=1

log=/dev/null
if [ -n "${OUT:-}" ]; then log="$OUT/gpu_check.log"; fi

{
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm \
        --format=csv,noheader
    python3 -c 'import numpy, numba; print("numpy", numpy.__version__, "from",
                numpy.__file__, "; numba", numba.__version__)'
    timeout --kill-after=10 "${BENCH_TIMEOUT_S:-420}" python3 benchmarks/bench_stage2_gpu.py
    status=$?
    if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
        echo "bench_stage2_gpu.py ran past ${BENCH_TIMEOUT_S:-420} s and was stopped"
    fi
    # Issue 7's loops on the GPU (no target; what the host loop costs and where it pays).
    PYTHONPATH="$PYTHONPATH:stage3_vmap/src" timeout --kill-after=10 \
        "${LOOP_BENCH_TIMEOUT_S:-120}" python3 benchmarks/bench_control_flow_gpu.py
    loops=$?
    if [ "$status" -eq 0 ]; then status=$loops; fi
    exit "$status"
} 2>&1 | tee "$log"
