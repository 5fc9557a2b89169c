/* Finds, loads and vets backend modules, once per process. A module that is missing,
 * fails to load, speaks another ABI or finds no device is reported, never fatal.
 *
 * Search order for dwconv_<name><LT_MODULE_EXT>, the first file that exists wins:
 *   1. each directory of DWCONV_MODULE_PATH (colon-separated);
 *   2. <the directory libdwconv was loaded from>/dwconv (installs and build trees);
 *   3. DWCONV_MODULEDIR, the configured $(pkglibdir).
 */
#define _GNU_SOURCE
#include <config.h>

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "cpu.h"
#include "internal.h"

typedef struct backend_slot {
    const char *name;
    int built;
    int tried;
    dwconv_module_ops table;      /* the module's, optional members filled */
    const dwconv_module_ops *ops; /* &table once accepted, even with no device */
    int device_count;
    char path[PATH_MAX];
    char detail[512];
} backend_slot;

static backend_slot slots[] = {
    [DWCONV_BACKEND_CUDA] = {.name = "cuda", .built = DWCONV_BUILT_CUDA},
    [DWCONV_BACKEND_HIP] = {.name = "hip", .built = DWCONV_BUILT_HIP},
};
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;

const char *dwconv_backend_name(dwconv_backend backend) {
    switch (backend) {
    case DWCONV_BACKEND_AUTO: return "auto";
    case DWCONV_BACKEND_CPU: return "cpu";
    case DWCONV_BACKEND_CUDA: return "cuda";
    case DWCONV_BACKEND_HIP: return "hip";
    }
    return "?";
}

dwconv_status dwconv_backend_parse(const char *name, dwconv_backend *backend) {
    dwconv_clear_error();
    if (!name || !backend)
        return dwconv_fail(DWCONV_ERROR_NULL_POINTER, "dwconv_backend_parse: %s is NULL",
                           name ? "backend" : "name");
    for (int b = DWCONV_BACKEND_AUTO; b <= DWCONV_BACKEND_HIP; b++)
        if (strcmp(name, dwconv_backend_name((dwconv_backend)b)) == 0) {
            *backend = (dwconv_backend)b;
            return DWCONV_SUCCESS;
        }
    return dwconv_fail(DWCONV_ERROR_INVALID_VALUE,
                       "dwconv_backend_parse: '%s' is not one of auto, cpu, cuda, hip", name);
}

/* DWCONV_MODULE_PATH, except in a set-uid or set-gid program: there a user could
 * make it load code of their choice with the program's rights (glibc's
 * secure_getenv ignores it then, as the dynamic loader ignores LD_LIBRARY_PATH). */
static const char *module_path_variable(void) {
#ifdef HAVE_SECURE_GETENV
    return secure_getenv("DWCONV_MODULE_PATH");
#else
    return getuid() == geteuid() && getgid() == getegid() ? getenv("DWCONV_MODULE_PATH") : NULL;
#endif
}

/* One candidate: 1 if it exists (path holds it), 0 if not; an over-long path or an
 * error other than "no such file" is recorded in why (the last one seen is
 * reported when no candidate is found). */
static int try_candidate(const char *dir, int dir_len, const char *file, char *path,
                         size_t size, char *why, size_t why_size) {
    int n = snprintf(path, size, "%.*s/%s", dir_len, dir, file);
    if (n < 0 || (size_t)n >= size) {
        snprintf(why, why_size, "%.*s/%s: path longer than %zu bytes, skipped", dir_len > 200 ?
                 200 : dir_len, dir, file, size - 1);
        path[0] = '\0';
        return 0;
    }
    if (access(path, F_OK) == 0) return 1;
    if (errno != ENOENT) snprintf(why, why_size, "%s: %s", path, strerror(errno));
    return 0;
}

/* Writes the path of the first existing candidate into path; 0 if none exists, with
 * the reason a candidate could not be looked at (if any) in why. */
static int find_module(const char *file, char *path, size_t size, char *why, size_t why_size) {
    const char *env = module_path_variable();
    why[0] = '\0';
    if (env && *env) {
        const char *dir = env;
        while (*dir) {
            size_t len = strcspn(dir, ":");
            if (len > 0 && len < (size_t)INT32_MAX &&
                try_candidate(dir, (int)len, file, path, size, why, why_size))
                return 1;
            dir += len + (dir[len] == ':');
        }
    }
    Dl_info self;
    if (dladdr((void *)&dwconv_version, &self) && self.dli_fname) {
        const char *slash = strrchr(self.dli_fname, '/');
        char dir[PATH_MAX];
        int n = slash ? snprintf(dir, sizeof dir, "%.*s/dwconv", (int)(slash - self.dli_fname),
                                 self.dli_fname)
                      : -1;
        if (n > 0 && (size_t)n < sizeof dir &&
            try_candidate(dir, n, file, path, size, why, why_size))
            return 1;
    }
    return try_candidate(DWCONV_MODULEDIR, (int)strlen(DWCONV_MODULEDIR), file, path, size, why,
                         why_size);
}

/* ---- stubs for the optional members a module leaves out ---- */

static dwconv_status stub_device_check(int device, char *msg) {
    (void)device, (void)msg;
    return DWCONV_SUCCESS;
}
static dwconv_status stub_set_stream(void *state, void *stream, char *msg) {
    (void)state;
    if (!stream) return DWCONV_SUCCESS;
    snprintf(msg, DWCONV_MSG_SIZE, "this backend has no streams: only NULL is accepted");
    return DWCONV_ERROR_UNSUPPORTED;
}
static void *stub_get_stream(void *state) {
    (void)state;
    return NULL;
}
static dwconv_status stub_set_threads(void *state, int threads, char *msg) {
    (void)state, (void)threads;
    snprintf(msg, DWCONV_MSG_SIZE, "this backend has no thread count to set");
    return DWCONV_ERROR_UNSUPPORTED;
}
static dwconv_status stub_timer_start(void *state, char *msg) {
    (void)state;
    snprintf(msg, DWCONV_MSG_SIZE, "this backend has no timer");
    return DWCONV_ERROR_UNSUPPORTED;
}
static dwconv_status stub_timer_stop(void *state, double *ms, char *msg) {
    (void)ms;
    return stub_timer_start(state, msg);
}

/* A full table: the module's members, and stubs where it has none. */
static void fill_optional(dwconv_module_ops *ops) {
#define FILL(member, stub)                                                               \
    if (ops->ops_size < offsetof(dwconv_module_ops, member) + sizeof ops->member ||      \
        !ops->member)                                                                    \
        ops->member = stub;
    FILL(device_check, stub_device_check)
    FILL(set_stream, stub_set_stream)
    FILL(get_stream, stub_get_stream)
    FILL(set_threads, stub_set_threads)
    FILL(timer_start, stub_timer_start)
    FILL(timer_stop, stub_timer_stop)
#undef FILL
}

/* NULL if the table is acceptable, else what is wrong with it. */
static const char *vet_ops(const dwconv_module_ops *ops, const char *name) {
    static _Thread_local char why[160];
    if (ops->abi_version != DWCONV_MODULE_ABI_VERSION) {
        snprintf(why, sizeof why, "module ABI version %u, this libdwconv needs %u",
                 ops->abi_version, DWCONV_MODULE_ABI_VERSION);
        return why;
    }
    if (ops->ops_size < DWCONV_MODULE_OPS_MIN_SIZE) {
        snprintf(why, sizeof why, "module ops table has %u bytes, ABI %u needs at least %zu",
                 ops->ops_size, DWCONV_MODULE_ABI_VERSION, (size_t)DWCONV_MODULE_OPS_MIN_SIZE);
        return why;
    }
    if (!ops->name || strcmp(ops->name, name) != 0) return "module names another backend";
    const void *required[] = {
        (void *)ops->device_count,    (void *)ops->device_name,  (void *)ops->context_create,
        (void *)ops->context_destroy, (void *)ops->describe,     (void *)ops->mem_alloc,
        (void *)ops->mem_free,        (void *)ops->copy_to_backend, (void *)ops->copy_to_host,
        (void *)ops->copy_on_backend, (void *)ops->synchronize,  (void *)ops->check_pointer,
        (void *)ops->supports,        (void *)ops->run,
    };
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (!required[i]) return "module ops table has a NULL required member";
    return NULL;
}

static void load_slot(backend_slot *slot) {
    char file[64], why[600];
    snprintf(file, sizeof file, "dwconv_%s%s", slot->name, LT_MODULE_EXT);
    if (!find_module(file, slot->path, sizeof slot->path, why, sizeof why)) {
        if (why[0])
            snprintf(slot->detail, sizeof slot->detail, "%s not found (%.400s)", file, why);
        else
            snprintf(slot->detail, sizeof slot->detail, "%s not found (%s)", file,
                     slot->built ? "set DWCONV_MODULE_PATH, or install it"
                                 : "this build was configured without it");
        slot->path[0] = '\0';
        return;
    }
    /* RTLD_NOW: a missing symbol is reported here, not as a crash mid-call.
     * The handle is never closed: GPU runtimes do not survive being unloaded. */
    void *handle = dlopen(slot->path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        snprintf(slot->detail, sizeof slot->detail, "cannot load: %s", dlerror());
        return;
    }
    dwconv_module_entry_fn entry;
    *(void **)&entry = dlsym(handle, DWCONV_MODULE_ENTRY_SYMBOL);
    if (!entry) {
        if (dlsym(handle, DWCONV_MODULE_ENTRY_SYMBOL_V1))
            snprintf(slot->detail, sizeof slot->detail,
                     "rejected: module ABI version 1 (dwconv 0.1), this libdwconv needs %u: "
                     "install the module built with this libdwconv", DWCONV_MODULE_ABI_VERSION);
        else
            snprintf(slot->detail, sizeof slot->detail, "no symbol %s: not a dwconv module",
                     DWCONV_MODULE_ENTRY_SYMBOL);
        return;
    }
    const dwconv_module_ops *ops = entry();
    const char *bad = ops ? vet_ops(ops, slot->name) : "module entry returned no ops table";
    if (bad) {
        snprintf(slot->detail, sizeof slot->detail, "rejected: %s", bad);
        return;
    }
    /* the module's table, as long as it is, then the stubs */
    memset(&slot->table, 0, sizeof slot->table);
    memcpy(&slot->table, ops, ops->ops_size < sizeof slot->table ? ops->ops_size
                                                                  : sizeof slot->table);
    fill_optional(&slot->table);
    char msg[DWCONV_MSG_SIZE] = "";
    slot->ops = &slot->table;
    slot->device_count = slot->table.device_count(msg);
    if (slot->device_count < 1) {
        slot->device_count = 0;
        snprintf(slot->detail, sizeof slot->detail, "loaded, no device: %s", msg);
        return;
    }
    int n = snprintf(slot->detail, sizeof slot->detail, "loaded, %d device(s)",
                     slot->device_count);
    for (int d = 0; d < slot->device_count && n > 0 && (size_t)n < sizeof slot->detail; d++)
        if (slot->table.device_check(d, msg) != DWCONV_SUCCESS)
            n += snprintf(slot->detail + n, sizeof slot->detail - (size_t)n,
                          "; device %d unusable: %s", d, msg);
}

dwconv_status dwconv_backend_device_check(const dwconv_module_ops *ops, int device, char *msg) {
    return ops->device_check ? ops->device_check(device, msg) : DWCONV_SUCCESS; /* cpu: NULL */
}

const dwconv_module_ops *dwconv_backend_ops(dwconv_backend backend,
                                            dwconv_backend_report *report) {
    if (report) *report = (dwconv_backend_report){.backend = backend};
    if (backend == DWCONV_BACKEND_CPU) {
        const dwconv_module_ops *ops = dwconv_cpu_ops();
        if (report) {
            *report = (dwconv_backend_report){.backend = backend, .built = 1, .loaded = 1,
                                              .device_count = 1};
            snprintf(report->detail, sizeof report->detail, "built in");
        }
        return ops;
    }
    if (backend != DWCONV_BACKEND_CUDA && backend != DWCONV_BACKEND_HIP) {
        if (report) snprintf(report->detail, sizeof report->detail, "not a concrete backend");
        return NULL;
    }
    backend_slot *slot = &slots[backend];
    pthread_mutex_lock(&slots_lock);
    if (!slot->tried) {
        slot->tried = 1;
        load_slot(slot);
    }
    pthread_mutex_unlock(&slots_lock);
    if (report) {
        report->built = slot->built;
        report->loaded = slot->ops != NULL;
        report->device_count = slot->device_count;
        snprintf(report->module_path, sizeof report->module_path, "%s", slot->path);
        snprintf(report->detail, sizeof report->detail, "%s", slot->detail);
    }
    return slot->ops && slot->device_count > 0 ? slot->ops : NULL;
}

dwconv_status dwconv_backend_query(dwconv_backend backend, dwconv_backend_report *report) {
    dwconv_clear_error();
    if (!report)
        return dwconv_fail(DWCONV_ERROR_NULL_POINTER, "dwconv_backend_query: report is NULL");
    if ((unsigned)backend > DWCONV_BACKEND_HIP || backend == DWCONV_BACKEND_AUTO)
        return dwconv_fail(DWCONV_ERROR_INVALID_VALUE,
                           "dwconv_backend_query: backend %d is not cpu, cuda or hip",
                           (int)backend);
    const dwconv_module_ops *ops = dwconv_backend_ops(backend, report);
    if (ops && backend == DWCONV_BACKEND_CPU) {
        void *state = NULL;
        char msg[DWCONV_MSG_SIZE];
        if (ops->context_create(0, &state, msg) == DWCONV_SUCCESS) {
            ops->describe(state, report->detail, sizeof report->detail);
            ops->context_destroy(state);
        }
    }
    return DWCONV_SUCCESS;
}

dwconv_status dwconv_device_name(dwconv_backend backend, int device, char *name,
                                 size_t name_size) {
    dwconv_clear_error();
    if (!name) return dwconv_fail(DWCONV_ERROR_NULL_POINTER, "dwconv_device_name: name is NULL");
    if (name_size == 0)
        return dwconv_fail(DWCONV_ERROR_INVALID_VALUE, "dwconv_device_name: name_size is 0");
    if ((unsigned)backend > DWCONV_BACKEND_HIP || backend == DWCONV_BACKEND_AUTO)
        return dwconv_fail(DWCONV_ERROR_INVALID_VALUE,
                           "dwconv_device_name: backend %d is not cpu, cuda or hip", (int)backend);
    dwconv_backend_report report;
    const dwconv_module_ops *ops = dwconv_backend_ops(backend, &report);
    if (!ops)
        return dwconv_fail(DWCONV_ERROR_BACKEND_UNAVAILABLE, "dwconv_device_name: %s: %s",
                           dwconv_backend_name(backend), report.detail);
    if (device < 0 || device >= report.device_count)
        return dwconv_fail(DWCONV_ERROR_INVALID_VALUE,
                           "dwconv_device_name: device %d does not exist (%s has %d)", device,
                           dwconv_backend_name(backend), report.device_count);
    char msg[DWCONV_MSG_SIZE] = "";
    dwconv_status st = ops->device_name(device, name, name_size, msg);
    if (st) return dwconv_fail(st, "dwconv_device_name: %s", msg);
    return DWCONV_SUCCESS;
}
