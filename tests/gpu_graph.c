#include "gpu_graph.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

/* The runtimes' functions as called here: every handle is a pointer, every status and
 * enum an int (0: success), in CUDA's driver API and HIP's runtime alike. */
typedef int (*fn_stream_create)(void **stream, unsigned flags);
typedef int (*fn_begin)(void *stream, int mode);
typedef int (*fn_end)(void *stream, void **graph);
typedef int (*fn_instantiate)(void **exec, void *graph, unsigned long long flags);
typedef int (*fn_launch)(void *exec, void *stream);
typedef int (*fn_one)(void *handle);

enum {
    STREAM_NON_BLOCKING = 1, /* CU_STREAM_NON_BLOCKING, hipStreamNonBlocking */
    CAPTURE_GLOBAL = 0       /* CU_STREAM_CAPTURE_MODE_GLOBAL, hipStreamCaptureModeGlobal:
                                any unsafe call from any thread fails the capture */
};

struct gpu_graph_api {
    void *lib;
    void *context; /* CUDA: the primary context made current; HIP: NULL */
    int device;
    fn_stream_create stream_create;
    fn_begin begin;
    fn_end end;
    fn_instantiate instantiate;
    fn_launch launch;
    fn_one wait, exec_destroy, graph_destroy, stream_destroy;
    int (*context_release)(int device);
    int (*context_pop)(void **context);
};

static void *symbol(gpu_graph_api *a, const char *name, int *missing) {
    void *s = dlsym(a->lib, name);
    if (!s) *missing = 1;
    return s;
}

/* The CUDA driver's names (the _v2 ones are what cuda.h's macros name today). */
static int open_cuda(gpu_graph_api *a, int device, char *why, size_t n) {
    a->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!a->lib) {
        snprintf(why, n, "libcuda.so.1: %s", dlerror());
        return -1;
    }
    int missing = 0;
    int (*init)(unsigned) = (int (*)(unsigned))symbol(a, "cuInit", &missing);
    int (*get)(int *, int) = (int (*)(int *, int))symbol(a, "cuDeviceGet", &missing);
    int (*retain)(void **, int) = (int (*)(void **, int))symbol(a, "cuDevicePrimaryCtxRetain", &missing);
    int (*push)(void *) = (int (*)(void *))symbol(a, "cuCtxPushCurrent_v2", &missing);
    a->context_pop = (int (*)(void **))symbol(a, "cuCtxPopCurrent_v2", &missing);
    a->context_release = (int (*)(int))symbol(a, "cuDevicePrimaryCtxRelease_v2", &missing);
    a->stream_create = (fn_stream_create)symbol(a, "cuStreamCreate", &missing);
    a->begin = (fn_begin)symbol(a, "cuStreamBeginCapture_v2", &missing);
    a->end = (fn_end)symbol(a, "cuStreamEndCapture", &missing);
    a->instantiate = (fn_instantiate)symbol(a, "cuGraphInstantiateWithFlags", &missing);
    a->launch = (fn_launch)symbol(a, "cuGraphLaunch", &missing);
    a->wait = (fn_one)symbol(a, "cuStreamSynchronize", &missing);
    a->exec_destroy = (fn_one)symbol(a, "cuGraphExecDestroy", &missing);
    a->graph_destroy = (fn_one)symbol(a, "cuGraphDestroy", &missing);
    a->stream_destroy = (fn_one)symbol(a, "cuStreamDestroy_v2", &missing);
    if (missing) {
        snprintf(why, n, "libcuda.so.1 lacks the graph functions (a driver older than CUDA 11.4)");
        return -1;
    }
    int dev = 0, err;
    if ((err = init(0)) || (err = get(&dev, device)) || (err = retain(&a->context, dev))) {
        snprintf(why, n, "the CUDA driver's device %d: error %d", device, err);
        return -1;
    }
    a->device = dev;
    if ((err = push(a->context))) {
        a->context_release(dev);
        a->context = NULL;
        snprintf(why, n, "cuCtxPushCurrent: error %d", err);
        return -1;
    }
    return 0;
}

static int open_hip(gpu_graph_api *a, int device, char *why, size_t n) {
    static const char *const names[] = {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"};
    for (int i = 0; i < 3 && !a->lib; i++) a->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!a->lib) {
        snprintf(why, n, "libamdhip64: %s", dlerror());
        return -1;
    }
    int missing = 0;
    int (*set_device)(int) = (int (*)(int))symbol(a, "hipSetDevice", &missing);
    a->stream_create = (fn_stream_create)symbol(a, "hipStreamCreateWithFlags", &missing);
    a->begin = (fn_begin)symbol(a, "hipStreamBeginCapture", &missing);
    a->end = (fn_end)symbol(a, "hipStreamEndCapture", &missing);
    a->instantiate = (fn_instantiate)symbol(a, "hipGraphInstantiateWithFlags", &missing);
    a->launch = (fn_launch)symbol(a, "hipGraphLaunch", &missing);
    a->wait = (fn_one)symbol(a, "hipStreamSynchronize", &missing);
    a->exec_destroy = (fn_one)symbol(a, "hipGraphExecDestroy", &missing);
    a->graph_destroy = (fn_one)symbol(a, "hipGraphDestroy", &missing);
    a->stream_destroy = (fn_one)symbol(a, "hipStreamDestroy", &missing);
    if (missing) {
        snprintf(why, n, "libamdhip64 lacks the graph functions");
        return -1;
    }
    int err = set_device(device);
    if (err) {
        snprintf(why, n, "hipSetDevice(%d): error %d", device, err);
        return -1;
    }
    return 0;
}

int gpu_graph_open(gpu_graph_api **api, dwconv_backend backend, int device, char *why,
                   size_t why_size) {
    gpu_graph_api *a = calloc(1, sizeof *a);
    if (!a) {
        snprintf(why, why_size, "out of host memory");
        return -1;
    }
    const int st = backend == DWCONV_BACKEND_CUDA  ? open_cuda(a, device, why, why_size)
                   : backend == DWCONV_BACKEND_HIP ? open_hip(a, device, why, why_size)
                                                   : (snprintf(why, why_size, "not a GPU backend"), -1);
    if (st != 0) {
        if (a->lib) dlclose(a->lib);
        free(a);
        return -1;
    }
    *api = a;
    return 0;
}

void gpu_graph_close(gpu_graph_api *a) {
    if (!a) return;
    if (a->context) {
        void *popped = NULL;
        a->context_pop(&popped);
        a->context_release(a->device);
    }
    dlclose(a->lib);
    free(a);
}

static int result(int err, const char *what, char *why, size_t n) {
    if (err) snprintf(why, n, "%s: error %d", what, err);
    return err ? -1 : 0;
}

int gpu_graph_stream(gpu_graph_api *a, void **stream, char *why, size_t n) {
    return result(a->stream_create(stream, STREAM_NON_BLOCKING), "creating a stream", why, n);
}

int gpu_graph_begin(gpu_graph_api *a, void *stream, char *why, size_t n) {
    return result(a->begin(stream, CAPTURE_GLOBAL), "beginning the capture", why, n);
}

int gpu_graph_end(gpu_graph_api *a, void *stream, void **exec, char *why, size_t n) {
    void *graph = NULL;
    if (result(a->end(stream, &graph), "ending the capture", why, n)) return -1;
    const int st = result(a->instantiate(exec, graph, 0), "instantiating the graph", why, n);
    a->graph_destroy(graph);
    return st;
}

int gpu_graph_launch(gpu_graph_api *a, void *exec, void *stream, char *why, size_t n) {
    return result(a->launch(exec, stream), "launching the graph", why, n);
}

int gpu_graph_wait(gpu_graph_api *a, void *stream, char *why, size_t n) {
    return result(a->wait(stream), "waiting for the stream", why, n);
}

void gpu_graph_free(gpu_graph_api *a, void *exec, void *stream) {
    if (exec) a->exec_destroy(exec);
    if (stream) a->stream_destroy(stream);
}
