// The kernels for one state at a time (double), compiled with the baseline flags: the scalar table of cpp/kernels.h
// (every call of one state, what the lanes leave of a batch, and the operations the lanes do not run: Jacobians, body
// poses, integrate / difference).
#include "batch.h"
#include "kernels.h"

namespace physai {
namespace scalar {

const Kernels kernels = kernels_of<double>("scalar");

}  // namespace scalar
}  // namespace physai
