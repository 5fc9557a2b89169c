/* Prints where the cuda module was looked for and what was found: the probe that
 * tests/check_setuid.sh runs as a set-gid program. */
#include <stdio.h>

#include "dwconv.h"

int main(void) {
    dwconv_backend_report r;
    if (dwconv_backend_query(DWCONV_BACKEND_CUDA, &r) != DWCONV_SUCCESS) return 2;
    printf("path=%s\ndetail=%s\n", r.module_path, r.detail);
    return 0;
}
