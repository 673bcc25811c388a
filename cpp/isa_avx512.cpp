// The lane kernels for avx512f: 8 states side by side (Lanes8), this file compiled with -mavx512f (CMakeLists.txt).
// It instantiates the kernels for Lanes8 only and exports nothing but physai::avx512::kernels (see cpp/kernels.h).
#include "batch.h"
#include "kernels.h"

namespace physai {
namespace avx512 {
const Kernels kernels = kernels_of<Lanes8>("avx512f");
}  // namespace avx512
}  // namespace physai
