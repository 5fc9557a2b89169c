/* Stream capture into a graph and its replay, for the GPU suite's capture test, from
 * whichever GPU backend runs: CUDA through its driver library (libcuda.so.1, present
 * wherever a CUDA device works), HIP through its runtime (libamdhip64). Both are
 * loaded with dlopen, so the suite links only libdwconv and stays one C source for
 * both backends. */
#ifndef DWCONV_TESTS_GPU_GRAPH_H
#define DWCONV_TESTS_GPU_GRAPH_H

#include <stddef.h>

#include "dwconv.h"

typedef struct gpu_graph_api gpu_graph_api;

/* Loads the backend's graph functions for device `device` (CUDA: its primary context,
 * the one the runtime in dwconv's module uses, is made current); 0, or -1 with why. */
int gpu_graph_open(gpu_graph_api **api, dwconv_backend backend, int device, char *why,
                   size_t why_size);
void gpu_graph_close(gpu_graph_api *api);

/* Each returns 0, or -1 with the runtime's error number in why. */
int gpu_graph_stream(gpu_graph_api *api, void **stream, char *why, size_t why_size);
int gpu_graph_begin(gpu_graph_api *api, void *stream, char *why, size_t why_size);
/* Ends the capture and instantiates what was captured. */
int gpu_graph_end(gpu_graph_api *api, void *stream, void **exec, char *why, size_t why_size);
int gpu_graph_launch(gpu_graph_api *api, void *exec, void *stream, char *why, size_t why_size);
int gpu_graph_wait(gpu_graph_api *api, void *stream, char *why, size_t why_size);
void gpu_graph_free(gpu_graph_api *api, void *exec, void *stream);

#endif
