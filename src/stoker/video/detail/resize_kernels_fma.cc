// Built with -mavx2 -mfma (CMakeLists); called only when the CPU has them (resize.cc).
#define STOKER_KERNEL_SUFFIX fma
#include "stoker/video/detail/resize_kernels.inc"
