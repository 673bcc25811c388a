#!/usr/bin/env bash
# The compiled engine under AddressSanitizer and UndefinedBehaviorSanitizer (by hand; not part of CI): builds the
# extension with -fsanitize=address,undefined -fno-omit-frame-pointer into its own virtual environment
# (build/sanitize/venv, build dir build/sanitize/{wheel_tag}; the project's .venv is left alone) and runs the tests that
# exercise it. Python itself is not instrumented, so libasan is preloaded; the interpreter's own leaks are not reported
# (detect_leaks=0); any report of either sanitizer stops the run (halt_on_error=1) and fails the script.
#
#   scripts/sanitize.sh                      # the native tests
#   scripts/sanitize.sh tests/test_rollout.py -k implicit
set -euo pipefail
cd "$(dirname "$0")/.."
CXX="${CXX:-g++}"
export UV_PROJECT_ENVIRONMENT="$PWD/build/sanitize/venv"
flags="-fsanitize=address,undefined -fno-omit-frame-pointer"
uv sync --quiet --reinstall-package physai \
    -C build-dir="build/sanitize/{wheel_tag}" -C cmake.define.PHYSAI_EXTRA_FLAGS="$flags" -C cmake.define.CMAKE_CXX_COMPILER="$CXX"
tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
    tests=(tests/test_backend.py tests/test_native_vs_numpy.py tests/test_rollout.py tests/test_integrators.py
           tests/test_jacobians.py tests/test_kinematics.py tests/test_errors.py tests/test_inverse.py tests/test_engine.py
           tests/test_derivatives.py tests/test_forces.py tests/test_constraints_native.py tests/test_constraints.py
           tests/test_threads.py tests/test_hostile_input.py)
fi
# libasan first, and the C++ runtime with it: the extension throws (a KernelError from C++), and an uninstrumented
# interpreter would otherwise load libstdc++ after ASan has set up its exception interceptors
asan="$("$CXX" -print-file-name=libasan.so) $("$CXX" -print-file-name=libstdc++.so)"
# the interpreter and numpy allocate and free outside the instrumented code: no leak report, no new/delete pairing check
export ASAN_OPTIONS="detect_leaks=0:alloc_dealloc_mismatch=0:halt_on_error=1:abort_on_error=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export PHYSAI_NUM_THREADS="${PHYSAI_NUM_THREADS:-2}"
python="$UV_PROJECT_ENVIRONMENT/bin/python"
isas="$(LD_PRELOAD="$asan" "$python" -c "from physai.engine import native; assert native.available(); print(' '.join(native.isas()))")"
[ -n "$isas" ] || { echo "the sanitized extension does not import"; exit 1; }
for isa in $isas; do
    echo "== PHYSAI_ISA=$isa"
    PHYSAI_ISA="$isa" LD_PRELOAD="$asan" "$python" -m pytest -o addopts= -q -p no:cacheprovider "${tests[@]}"
done
echo "sanitizers: no report"
