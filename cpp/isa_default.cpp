// The lane kernels for the baseline instruction set ("default"): 2 states side by side (Lanes2), this file compiled
// with the baseline flags (x86-64's SSE2; NEON on arm64).
// It instantiates the kernels for Lanes2 only and exports nothing but physai::baseline::kernels (see cpp/kernels.h).
#include "batch.h"
#include "kernels.h"

namespace physai {
namespace baseline {
const Kernels kernels = kernels_of<Lanes2>("default");
}  // namespace baseline
}  // namespace physai
