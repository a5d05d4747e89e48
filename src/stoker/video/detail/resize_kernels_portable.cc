#define STOKER_KERNEL_SUFFIX portable
#include "stoker/video/detail/resize_kernels.inc"
