// The lane kernels for avx2: 4 states side by side (Lanes4), this file compiled with -mavx2 (CMakeLists.txt).
// It instantiates the kernels for Lanes4 only and exports nothing but physai::avx2::kernels (see cpp/kernels.h).
#include "batch.h"
#include "kernels.h"

namespace physai {
namespace avx2 {
const Kernels kernels = kernels_of<Lanes4>("avx2");
}  // namespace avx2
}  // namespace physai
