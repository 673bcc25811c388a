// The run-time choice of the batch kernels' instruction set (cpp/kernels.h): the variants built into this module (CMake
// defines PHYSAI_HAVE_AVX512, PHYSAI_HAVE_AVX2, PHYSAI_HAVE_LANES for the isa_*.cpp it compiles), best first; at load
// time PHYSAI_ISA if the CPU supports it, else the best it supports; set_isa switches.
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "kernels.h"

namespace physai {
namespace {

#if !defined(PHYSAI_HAVE_LANES)
// without the vector extension: the scalar kernels under the name "default", one state at a time
const Kernels scalar_default = [] {
    Kernels k = scalar::kernels;
    k.name = "default";
    return k;
}();
#endif

const Kernels *const VARIANTS[] = {
#if defined(PHYSAI_HAVE_AVX512)
    &avx512::kernels,
#endif
#if defined(PHYSAI_HAVE_AVX2)
    &avx2::kernels,
#endif
#if defined(PHYSAI_HAVE_LANES)
    &baseline::kernels,
#else
    &scalar_default,
#endif
};
constexpr int N_VARIANTS = int(sizeof(VARIANTS) / sizeof(VARIANTS[0]));

// the variant named `name` if the CPU supports it, else -1
int isa_index(const char *name) {
    for (int k = 0; k < N_VARIANTS; k++)
        if (std::strcmp(name, VARIANTS[k]->name) == 0) return isa_supported(k) ? k : -1;
    return -1;
}

// PHYSAI_ISA when the CPU supports it; otherwise (unset, unknown, unsupported) the best variant it supports
int initial_isa() {
    const char *env = std::getenv("PHYSAI_ISA");
    int k = env ? isa_index(env) : -1;
    if (k >= 0) return k;
    for (k = 0; !isa_supported(k); k++) {}
    return k;
}

std::atomic<int> &active() {
    static std::atomic<int> k{initial_isa()};
    return k;
}

}  // namespace

int isa_count() { return N_VARIANTS; }

const Kernels &isa_kernels(int k) { return *VARIANTS[k]; }

bool isa_supported(int k) {
    if (k < 0 || k >= N_VARIANTS) return false;
#if defined(PHYSAI_HAVE_AVX512) || defined(PHYSAI_HAVE_AVX2)
    __builtin_cpu_init();
    if (std::strcmp(VARIANTS[k]->name, "avx512f") == 0) return __builtin_cpu_supports("avx512f");
    if (std::strcmp(VARIANTS[k]->name, "avx2") == 0) return __builtin_cpu_supports("avx2");
#endif
    return true;
}

int active_isa() { return active().load(); }

bool set_isa(const char *name) {
    int k = isa_index(name);
    if (k >= 0) active().store(k);
    return k >= 0;
}

DenseMetricHook &dense_metric_hook() {
    static DenseMetricHook hook;
    return hook;
}

}  // namespace physai
