/* oneDNN (2.x C API) on the same problem, as the bench's yardstick: the primitive a
 * user gets on plain tensors of the problem's layout (ncw or nwc), and the one it
 * prefers when left free to choose (format "any", usually blocked nCw16c), with and
 * without the reorders a user with plain data pays on every call. Built only when
 * configure found oneDNN (HAVE_DNNL); otherwise onednn_available() is 0. */
#ifndef DWCONV_BENCH_ONEDNN_H
#define DWCONV_BENCH_ONEDNN_H

#include "dwconv.h"

typedef enum onednn_mode {
    ONEDNN_PLAIN,           /* plain user tensors in, plain out */
    ONEDNN_BLOCKED,         /* its preferred layouts, the convolution alone */
    ONEDNN_BLOCKED_REORDERS /* plain -> preferred, convolution, preferred -> plain */
} onednn_mode;

typedef struct onednn_problem onednn_problem;

int onednn_available(void);

/* The convolution of desc (padding resolved: pad_left/pad_right as given) on x, w,
 * bias (may be NULL) and y, all host memory in dwconv's layout and dtypes; as_2d
 * states it as images of height 1 (same bytes), where oneDNN 2.x keeps its jit
 * depthwise kernels. NULL when oneDNN cannot express or run it; why says so. Weights
 * are reordered once, here. */
onednn_problem *onednn_create(const dwconv_desc *desc, int64_t pad_left, int64_t pad_right,
                              onednn_mode mode, int as_2d, const void *x, const void *w,
                              const void *bias, void *y, char *why, size_t why_size);

/* One call: executes and waits. Runs on the OpenMP threads the process allows. */
dwconv_status onednn_run(void *problem);

/* The implementation oneDNN picked ("jit:avx512_core", "gemm:jit", ...). */
const char *onednn_impl(const onednn_problem *problem);

void onednn_destroy(onednn_problem *problem);

#endif
