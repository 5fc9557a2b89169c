/*
 * The module loader (src/core/loader.c) with fake modules (tests/modules/fake_module.c)
 * and with the real modules of this build. Each test puts symlinks named like the real
 * modules (dwconv_cuda.so, dwconv_hip.so) in a temporary directory, points
 * DWCONV_MODULE_PATH at it, and checks what dwconv_backend_query reports, that an
 * explicit context fails cleanly with the reason, and what AUTO picks.
 *
 * The loader loads once per process, so every test runs in a process of its own
 * (CK_FORK is set explicitly, whatever the environment says).
 */
#include <config.h>

#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core_check.h"
#include "dwconv.h"
#include "dwconv_module.h"
#include "test_util.h"

/* ---- the temporary module directory ----------------------------------------------- */

static char dir[PATH_MAX];

/* The build tree: $abs_top_builddir (make check sets it), else the directory above
 * this program's. */
static const char *builddir(void) {
    static char path[PATH_MAX];
    const char *env = getenv("abs_top_builddir");
    if (env && *env) return env;
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    ck_assert_msg(n > 0, "set abs_top_builddir to the build tree");
    path[n] = '\0';
    for (int up = 0; up < 2; up++) *strrchr(path, '/') = '\0';
    return path;
}

static void fake_module_file(const char *fake, char *path, size_t size) {
    snprintf(path, size, "%s/tests/modules/.libs/%s%s", builddir(), fake, LT_MODULE_EXT);
}

/* Where the loader will look for a backend's module in dir. */
static void slot_file(const char *backend, char *path, size_t size) {
    snprintf(path, size, "%s/dwconv_%s%s", dir, backend, LT_MODULE_EXT);
}

static void setup(void) {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/dwconv-loader-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    ck_assert_msg(mkdtemp(dir), "mkdtemp %s: %s", dir, strerror(errno));
    ck_assert(setenv("DWCONV_MODULE_PATH", dir, 1) == 0);
}

static void teardown(void) {
    const char *backends[] = {"cuda", "hip"};
    char path[PATH_MAX + 32];
    for (int i = 0; i < 2; i++) {
        slot_file(backends[i], path, sizeof path);
        unlink(path);
    }
    rmdir(dir);
}

/* Links the fake module into dir as the backend's module (main has checked that the
 * fake modules exist). */
static void install(const char *fake, const char *backend) {
    char target[PATH_MAX], link[PATH_MAX + 32];
    fake_module_file(fake, target, sizeof target);
    ck_assert_msg(access(target, R_OK) == 0, "%s: %s", target, strerror(errno));
    slot_file(backend, link, sizeof link);
    ck_assert_msg(symlink(target, link) == 0, "symlink %s: %s", link, strerror(errno));
}

/* ---- what the library must say -------------------------------------------------------- */

static int built(dwconv_backend b) {
    return b == DWCONV_BACKEND_CUDA ? DWCONV_BUILT_CUDA : DWCONV_BUILT_HIP;
}

static dwconv_backend_report query(dwconv_backend b) {
    dwconv_backend_report r;
    memset(&r, 0x5a, sizeof r);
    ck_assert(dwconv_backend_query(b, &r) == DWCONV_SUCCESS);
    ck_assert(r.backend == b);
    ck_assert_int_eq(r.built, built(b));
    ck_assert(memchr(r.detail, '\0', sizeof r.detail) && memchr(r.module_path, '\0', 512));
    return r;
}

static dwconv_backend auto_backend(void) {
    dwconv_context *ctx = NULL;
    dwconv_backend chosen = (dwconv_backend)-1;
    ck_assert_msg(dwconv_context_create(&ctx, DWCONV_BACKEND_AUTO, 0) == DWCONV_SUCCESS,
                  "AUTO failed: %s", dwconv_last_error());
    ck_assert(dwconv_context_backend(ctx, &chosen) == DWCONV_SUCCESS);
    dwconv_context_destroy(ctx);
    return chosen;
}

/* The backend cannot run, for the reason why: its report says so (loaded or not, no
 * device), an explicit context and its device name fail with BACKEND_UNAVAILABLE and
 * the reason, and AUTO gives the cpu. */
static void expect_unusable(dwconv_backend b, int loaded, const char *why) {
    const char *name = dwconv_backend_name(b);
    dwconv_backend_report r = query(b);
    ck_assert_msg(r.loaded == loaded, "%s: loaded %d, want %d (%s)", name, r.loaded, loaded,
                  r.detail);
    ck_assert_int_eq(r.device_count, 0);
    ck_assert_msg(strstr(r.detail, why), "%s: detail '%s' does not say '%s'", name, r.detail, why);

    dwconv_context *ctx = (dwconv_context *)&r; /* a failed call leaves it as it was */
    ck_assert(dwconv_context_create(&ctx, b, 0) == DWCONV_ERROR_BACKEND_UNAVAILABLE);
    ck_assert(ctx == (dwconv_context *)&r);
    const char *msg = dwconv_last_error();
    ck_assert_msg(strstr(msg, "dwconv_context_create") && strstr(msg, name) && strstr(msg, why),
                  "%s: the message '%s' does not give the reason '%s'", name, msg, why);
    char device[64];
    ck_assert(dwconv_device_name(b, 0, device, sizeof device) == DWCONV_ERROR_BACKEND_UNAVAILABLE);
    ck_assert(strstr(dwconv_last_error(), why));
    ck_assert_int_eq(auto_backend(), DWCONV_BACKEND_CPU);
}

/* The module in dir was the one tried. */
static void expect_tried(dwconv_backend b) {
    char path[PATH_MAX + 32];
    slot_file(dwconv_backend_name(b), path, sizeof path);
    ck_assert_str_eq(query(b).module_path, path);
}

/* ---- broken modules -------------------------------------------------------------------- */

/* A fake module linked in as a backend's, and what the loader must say about it. */
static const struct broken {
    const char *fake, *backend, *why;
} broken[] = {
    {"fake_noentry", "cuda", "no symbol " DWCONV_MODULE_ENTRY_SYMBOL},
    {"fake_oldabi", "cuda", "module ABI version 1 (dwconv 0.1)"},
    {"fake_abi", "cuda", "module ABI version"}, /* the numbers: checked below */
    {"fake_short", "cuda", "bytes, ABI 2 needs at least"},
    {"fake_nullmember", "cuda", "NULL required member"},
    {"fake_nulltable", "hip", "no ops table"},
    {"fake_nodevice_cuda", "hip", "another backend"}, /* cuda's module as hip's */
};

START_TEST(broken_module) {
    const struct broken *m = &broken[_i];
    install(m->fake, m->backend);
    dwconv_backend b = DWCONV_BACKEND_AUTO;
    ck_assert(dwconv_backend_parse(m->backend, &b) == DWCONV_SUCCESS);
    expect_unusable(b, 0, m->why);
    expect_tried(b);
    if (!strcmp(m->fake, "fake_abi")) {
        char abi[80];
        snprintf(abi, sizeof abi, "ABI version %u, this libdwconv needs %u",
                 DWCONV_MODULE_ABI_VERSION + 1, DWCONV_MODULE_ABI_VERSION);
        ck_assert_msg(strstr(query(b).detail, abi), "'%s' does not say '%s'", query(b).detail, abi);
    }
}
END_TEST

START_TEST(not_a_shared_object) {
    char path[PATH_MAX + 32];
    slot_file("cuda", path, sizeof path);
    FILE *f = fopen(path, "w");
    ck_assert(f);
    fputs("this is not an ELF file\n", f);
    fclose(f);
    expect_unusable(DWCONV_BACKEND_CUDA, 0, "cannot load");
    expect_tried(DWCONV_BACKEND_CUDA);
}
END_TEST

/* An empty directory: not found, unless a module is installed where the loader looks
 * next (beside the library, then the configured module directory). */
START_TEST(module_missing) {
    const char *names[] = {"cuda", "hip"};
    for (int i = 0; i < 2; i++) {
        char installed[PATH_MAX];
        snprintf(installed, sizeof installed, "%s/dwconv_%s%s", DWCONV_MODULEDIR, names[i],
                 LT_MODULE_EXT);
        if (access(installed, F_OK) == 0) {
            printf("module_missing: %s is installed, so the loader finds it: not checked\n",
                   installed);
            continue;
        }
        snprintf(installed, sizeof installed, "%s/tests/dwconv/dwconv_%s%s", builddir(),
                 names[i], LT_MODULE_EXT); /* beside the code of libdwconv: this program */
        ck_assert_msg(access(installed, F_OK) != 0, "remove %s", installed);
        dwconv_backend b = i ? DWCONV_BACKEND_HIP : DWCONV_BACKEND_CUDA;
        expect_unusable(b, 0, "not found");
        ck_assert_str_eq(query(b).module_path, "");
        if (!built(b))
            ck_assert_msg(strstr(query(b).detail, "configured without"),
                          "a backend left out of the build says so: '%s'", query(b).detail);
    }
}
END_TEST

/* ---- modules without a device --------------------------------------------------------- */

START_TEST(no_device) {
    install("fake_nodevice_cuda", "cuda");
    install("fake_nodevice_hip", "hip");
    expect_unusable(DWCONV_BACKEND_CUDA, 1, "fake: no device");
    expect_unusable(DWCONV_BACKEND_HIP, 1, "fake: no device");
    ck_assert(strstr(query(DWCONV_BACKEND_CUDA).detail, "no device"));
    expect_tried(DWCONV_BACKEND_CUDA);
    expect_tried(DWCONV_BACKEND_HIP);

    /* loaded once: another module path later changes nothing in this process */
    char before[512];
    snprintf(before, sizeof before, "%s", query(DWCONV_BACKEND_CUDA).module_path);
    ck_assert(setenv("DWCONV_MODULE_PATH", "/nonexistent", 1) == 0);
    dwconv_backend_report r = query(DWCONV_BACKEND_CUDA);
    ck_assert(r.loaded == 1 && strcmp(r.module_path, before) == 0);
}
END_TEST

/* DWCONV_BACKEND names a backend that cannot run: AUTO fails with the reason instead of
 * quietly running somewhere else (an explicit request is never overridden). */
START_TEST(environment_names_unusable_backend) {
    install("fake_nodevice_cuda", "cuda");
    ck_assert(setenv("DWCONV_BACKEND", "cuda", 1) == 0);
    dwconv_context *ctx = NULL;
    ck_assert(dwconv_context_create(&ctx, DWCONV_BACKEND_AUTO, 0) ==
              DWCONV_ERROR_BACKEND_UNAVAILABLE);
    ck_assert(ctx == NULL);
    ck_assert_msg(strstr(dwconv_last_error(), "cuda") && strstr(dwconv_last_error(), "no device"),
                  "message: %s", dwconv_last_error());
    ck_assert(setenv("DWCONV_BACKEND", "auto", 1) == 0);
    ck_assert_int_eq(auto_backend(), DWCONV_BACKEND_CPU);
    unsetenv("DWCONV_BACKEND");
}
END_TEST

/* DWCONV_MODULE_PATH is a list: empty entries and directories without the module are
 * passed over. */
START_TEST(search_path_list) {
    install("fake_nodevice_cuda", "cuda");
    char list[3 * PATH_MAX];
    snprintf(list, sizeof list, "/nonexistent-dwconv-dir::%s/..:%s:", dir, dir);
    ck_assert(setenv("DWCONV_MODULE_PATH", list, 1) == 0);
    expect_unusable(DWCONV_BACKEND_CUDA, 1, "fake: no device");
    expect_tried(DWCONV_BACKEND_CUDA);
}
END_TEST

/* ---- modules with a (fake) device --------------------------------------------------------- */

START_TEST(device_cuda) {
    install("fake_device_cuda", "cuda");
    install("fake_nodevice_hip", "hip");
    dwconv_backend_report r = query(DWCONV_BACKEND_CUDA);
    ck_assert_msg(r.loaded == 1 && r.device_count == 1, "%s", r.detail);
    ck_assert_int_eq(auto_backend(), DWCONV_BACKEND_CUDA);
    char name[64];
    ck_assert(dwconv_device_name(DWCONV_BACKEND_CUDA, 0, name, sizeof name) == DWCONV_SUCCESS);
    ck_assert_str_eq(name, "fake cuda device 0");

    dwconv_context *ctx = NULL;
    ck_assert(dwconv_context_create(&ctx, DWCONV_BACKEND_CUDA, 1) == DWCONV_ERROR_INVALID_VALUE);
    ck_assert(strstr(dwconv_last_error(), "device 1"));
    ck_assert(dwconv_context_create(&ctx, DWCONV_BACKEND_CUDA, 0) == DWCONV_SUCCESS);
    /* a module's failure reaches the caller with the module's words */
    ck_assert(dwconv_context_set_threads(ctx, 2) == DWCONV_ERROR_UNSUPPORTED);
    ck_assert_str_eq(dwconv_last_error(), "dwconv_context_set_threads: fake: no threads");

    /* the core validates before the module sees anything: the fake forward marks y[0] */
    float x[16] = {0}, w[3] = {0};
    unsigned char y[64];
    dwconv_desc d;
    dwconv_desc_init(&d, 1, 1, 16, 3);
    d.stride = 0;
    test_poison(y, sizeof y);
    ck_assert(dwconv_forward(ctx, &d, x, w, NULL, y) == DWCONV_ERROR_INVALID_VALUE);
    ck_assert_msg(test_untouched(y, sizeof y), "the module was called with an invalid descriptor");
    d.stride = 1;
    ck_assert(dwconv_forward(ctx, &d, x, w, NULL, y) == DWCONV_ERROR_UNSUPPORTED);
    ck_assert_str_eq(dwconv_last_error(), "dwconv_forward: fake: no kernels");
    ck_assert_msg(y[0] == 0x5a, "the module's forward was not called");
    ck_assert(dwconv_context_destroy(ctx) == DWCONV_SUCCESS);

    /* DWCONV_BACKEND overrides the choice of AUTO */
    ck_assert(setenv("DWCONV_BACKEND", "cpu", 1) == 0);
    ck_assert_int_eq(auto_backend(), DWCONV_BACKEND_CPU);
}
END_TEST

/* A table that ends where the required members do: the core answers for every
 * optional member with its stub, never calling past the table. */
START_TEST(minimal_table) {
    install("fake_minimal", "cuda");
    dwconv_backend_report r = query(DWCONV_BACKEND_CUDA);
    ck_assert_msg(r.loaded == 1 && r.device_count == 1, "%s", r.detail);
    dwconv_context *ctx = NULL;
    ck_assert(dwconv_context_create(&ctx, DWCONV_BACKEND_CUDA, 0) == DWCONV_SUCCESS);
    int stream_object;
    void *stream = &stream_object;
    ck_assert(dwconv_context_set_stream(ctx, stream) == DWCONV_ERROR_UNSUPPORTED);
    ck_assert_msg(strstr(dwconv_last_error(), "no streams"), "%s", dwconv_last_error());
    ck_assert(dwconv_context_set_stream(ctx, NULL) == DWCONV_SUCCESS);
    ck_assert(dwconv_context_get_stream(ctx, &stream) == DWCONV_SUCCESS && stream == NULL);
    ck_assert(dwconv_context_set_threads(ctx, 2) == DWCONV_ERROR_UNSUPPORTED);
    ck_assert_msg(strstr(dwconv_last_error(), "no thread count"), "%s", dwconv_last_error());
    double ms = -1.0;
    ck_assert(dwconv_timer_start(ctx) == DWCONV_ERROR_UNSUPPORTED);
    ck_assert(dwconv_timer_stop(ctx, &ms) == DWCONV_ERROR_UNSUPPORTED && ms == -1.0);
    ck_assert(dwconv_context_destroy(ctx) == DWCONV_SUCCESS);
}
END_TEST

/* AUTO takes the first of cuda, hip with a device. */
START_TEST(device_hip_only) {
    install("fake_nodevice_cuda", "cuda");
    install("fake_device_hip", "hip");
    ck_assert_int_eq(auto_backend(), DWCONV_BACKEND_HIP);
}
END_TEST

START_TEST(device_both) {
    install("fake_device_cuda", "cuda");
    install("fake_device_hip", "hip");
    ck_assert_int_eq(auto_backend(), DWCONV_BACKEND_CUDA);
}
END_TEST

/* ---- the real modules of this build ------------------------------------------------------ */

/* With DWCONV_MODULE_PATH as make check sets it: each module that was built loads, and
 * either finds a device or says why not (no GPU, no driver), in which case nothing
 * can create a context on it and AUTO falls back to the cpu. */
START_TEST(real_modules) {
    char fallback[PATH_MAX];
    const char *path = getenv("DWCONV_REAL_MODULE_PATH");
    if (!path || !*path) { /* run by hand: where make check points */
        snprintf(fallback, sizeof fallback, "%s/src/.libs/dwconv", builddir());
        path = fallback;
    }
    ck_assert(setenv("DWCONV_MODULE_PATH", path, 1) == 0);
    const dwconv_backend gpus[] = {DWCONV_BACKEND_CUDA, DWCONV_BACKEND_HIP};
    int devices = 0;
    for (int i = 0; i < 2; i++) {
        const char *name = dwconv_backend_name(gpus[i]);
        dwconv_backend_report r = query(gpus[i]);
        printf("real_modules: %s: built %d loaded %d devices %d, %s: %s\n", name, r.built,
               r.loaded, r.device_count, r.module_path, r.detail);
        if (!r.built) {
            ck_assert(!r.loaded && r.device_count == 0);
            continue;
        }
        ck_assert_msg(r.loaded == 1, "%s: this build's module did not load: %s", name, r.detail);
        ck_assert(strstr(r.module_path, path) == r.module_path);
        devices += r.device_count;
        if (r.device_count == 0) expect_unusable(gpus[i], 1, "no device");
    }
    if (devices == 0) ck_assert_int_eq(auto_backend(), DWCONV_BACKEND_CPU);
}
END_TEST

/* A candidate path longer than the loader's buffer is skipped, never cut short: 0.1
 * truncated it and loaded whatever file the truncated name named. Here the cut name
 * would be the fake module with a device. */
START_TEST(overlong_path_skipped) {
    /* dir/aaa.../aaa...: folders of 200 bytes, 4085 bytes in all, so that
     * "<deep>/dwconv_cuda.so" cut to a PATH_MAX buffer is "<deep>/dwconv_cu" */
    char deep[PATH_MAX], target[PATH_MAX], cut[PATH_MAX];
    const int want = PATH_MAX - 11;
    int n = snprintf(deep, sizeof deep, "%s", dir);
    while (n < want) {
        int part = want - n - 1 < 200 ? want - n - 1 : 200;
        if (part < 1) part = 1; /* (want - n - 1 is never 0 with these sizes) */
        deep[n++] = '/';
        memset(deep + n, 'a', (size_t)part);
        n += part;
        deep[n] = '\0';
        ck_assert_msg(mkdir(deep, 0755) == 0, "mkdir: %s", strerror(errno));
    }
    char full[PATH_MAX + 64];
    snprintf(full, sizeof full, "%s/dwconv_cuda%s", deep, LT_MODULE_EXT);
    memcpy(cut, full, PATH_MAX - 1); /* the name a PATH_MAX buffer would keep */
    cut[PATH_MAX - 1] = '\0';
    fake_module_file("fake_device_cuda", target, sizeof target);
    ck_assert_msg(symlink(target, cut) == 0, "symlink: %s", strerror(errno));
    ck_assert(setenv("DWCONV_MODULE_PATH", deep, 1) == 0);
    dwconv_backend_report r = query(DWCONV_BACKEND_CUDA);
    ck_assert_msg(r.device_count == 0, "a truncated path was loaded: %s (%s)", r.module_path,
                  r.detail);
    ck_assert_msg(strstr(r.detail, "path longer than"), "detail: %s", r.detail);
    unlink(cut);
    for (char *slash; (slash = strrchr(deep, '/')) && strlen(deep) > strlen(dir); *slash = '\0')
        rmdir(deep);
}
END_TEST

/* A candidate that cannot be looked at for another reason than "no such file" says
 * so (0.1 reported "not found" for an unreadable folder or a symlink loop). */
START_TEST(access_error_reported) {
    char loop[PATH_MAX + 32];
    slot_file("cuda", loop, sizeof loop); /* dir/dwconv_cuda.so -> itself */
    ck_assert(symlink(loop, loop) == 0);
    char list[2 * PATH_MAX + 64];
    snprintf(list, sizeof list, "%s/dwconv_cuda%s", dir, LT_MODULE_EXT); /* a "directory" */
    ck_assert(setenv("DWCONV_MODULE_PATH", list, 1) == 0);
    dwconv_backend_report r = query(DWCONV_BACKEND_CUDA);
    ck_assert_msg(strstr(r.detail, "Too many levels of symbolic links"), "detail: %s", r.detail);
    ck_assert_int_eq(r.device_count, 0);
}
END_TEST

int main(void) {
    /* every test but real_modules needs the fake modules: without shared libraries
     * (--disable-shared) there are none, and this program cannot test the loader */
    char fake[PATH_MAX];
    fake_module_file("fake_device_cuda", fake, sizeof fake);
    if (access(fake, R_OK) != 0) {
        printf("SKIP: %s was not built (shared libraries disabled?)\n", fake);
        return 77;
    }
    /* the tests replace DWCONV_MODULE_PATH; keep make check's for real_modules */
    const char *real = getenv("DWCONV_MODULE_PATH");
    if (real) setenv("DWCONV_REAL_MODULE_PATH", real, 1);
    unsetenv("DWCONV_BACKEND");

    Suite *s = suite_create("loader");
    TCase *tc = core_tcase(s, "broken", 0, setup, teardown);
    tcase_add_loop_test(tc, broken_module, 0, sizeof broken / sizeof broken[0]);
    tcase_add_test(tc, not_a_shared_object);
    tcase_add_test(tc, module_missing);

    tc = core_tcase(s, "no_device", 0, setup, teardown);
    tcase_add_test(tc, no_device);
    tcase_add_test(tc, search_path_list);
    tcase_add_test(tc, overlong_path_skipped);
    tcase_add_test(tc, access_error_reported);
    tcase_add_test(tc, environment_names_unusable_backend);

    tc = core_tcase(s, "device", 0, setup, teardown);
    tcase_add_test(tc, device_cuda);
    tcase_add_test(tc, minimal_table);
    tcase_add_test(tc, device_hip_only);
    tcase_add_test(tc, device_both);

    /* a GPU runtime can take a while to find nothing */
    tc = core_tcase(s, "real", 60, setup, teardown);
    tcase_add_test(tc, real_modules);
    return core_run(s, 1); /* the loader loads once per process */
}
