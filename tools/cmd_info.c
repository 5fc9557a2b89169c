/* dwconv info: what this build and this machine offer, and why a backend is missing. */
#include <stdio.h>
#include <stdlib.h>

#include "cpu_features.h"
#include "dwconv.h"
#include "tool.h"

static void cpu_features(void) {
#if defined(__x86_64__) || defined(__i386__)
    dwconv_cpu_features f = dwconv_cpu_features_detect();
    const struct { const char *name; int has; } shown[] = {
        {"sse4.2", f.sse42},     {"avx2", f.avx2},         {"fma", f.fma},
        {"f16c", f.f16c},        {"avx512f", f.avx512f},   {"avx512bw", f.avx512bw},
        {"avx512vl", f.avx512vl}, {"avx512dq", f.avx512dq}, {"avx512bf16", f.avx512bf16},
    };
    printf("  cpu features:");
    for (size_t i = 0; i < sizeof shown / sizeof shown[0]; i++)
        if (shown[i].has) printf(" %s", shown[i].name);
    printf("\n");
#endif
}

static void show_backend(dwconv_backend backend) {
    dwconv_backend_report r;
    dwconv_backend_query(backend, &r);
    printf("%s:\n", dwconv_backend_name(backend));
    if (backend != DWCONV_BACKEND_CPU) {
        printf("  built:   %s\n", r.built ? "yes" : "no");
        printf("  module:  %s\n", r.module_path[0] ? r.module_path : "(none found)");
        printf("  loaded:  %s\n", r.loaded ? "yes" : "no");
    }
    printf("  status:  %s\n", r.detail);
    for (int i = 0; i < r.device_count; i++) {
        char name[256];
        if (dwconv_device_name(backend, i, name, sizeof name) == DWCONV_SUCCESS)
            printf("  device %d: %s\n", i, name);
        else
            printf("  device %d: (%s)\n", i, dwconv_last_error());
    }
    if (backend == DWCONV_BACKEND_CPU) cpu_features();
}

int cmd_info(int argc, char **argv) {
    (void)argv;
    if (argc > 1) {
        fprintf(stderr, "dwconv info takes no arguments\n");
        return 2;
    }
    printf("dwconv %s\n", dwconv_version_string());
    const char *env_backend = getenv("DWCONV_BACKEND");
    const char *env_path = getenv("DWCONV_MODULE_PATH");
    printf("DWCONV_BACKEND=%s  DWCONV_MODULE_PATH=%s\n", env_backend ? env_backend : "(unset)",
           env_path ? env_path : "(unset)");
    for (int b = DWCONV_BACKEND_CPU; b <= DWCONV_BACKEND_HIP; b++) show_backend((dwconv_backend)b);

    dwconv_context *ctx = NULL;
    dwconv_backend picked;
    if (dwconv_context_create(&ctx, DWCONV_BACKEND_AUTO, 0) == DWCONV_SUCCESS &&
        dwconv_context_backend(ctx, &picked) == DWCONV_SUCCESS)
        printf("auto picks: %s\n", dwconv_backend_name(picked));
    else
        printf("auto picks nothing: %s\n", dwconv_last_error());
    dwconv_context_destroy(ctx);
    return 0;
}
