/* The emulator's scheduler: see gpu_emulate.h. */
#include "gpu_emulate.h"

#include <stdio.h>
#include <string.h>

dim3 threadIdx, blockIdx, blockDim, gridDim;

#ifndef GPU_EMULATE_AVAILABLE
void __syncthreads() {}
unsigned char *gpu_emulated_shared() { return NULL; }
int gpu_emulate_launch(const std::function<void()> &, const int64_t *, int, size_t) {
    fprintf(stderr, "gpu_emulate: this platform has no ucontext.h\n");
    return -1;
}
#else
#include <ucontext.h>

#include <vector>

namespace {

enum thread_state { RUNNING, AT_BARRIER, FINISHED };

const size_t stack_bytes = 256 * 1024;

struct emulator {
    const std::function<void()> *body;
    ucontext_t scheduler;
    std::vector<ucontext_t> contexts;
    std::vector<std::vector<char> > stacks;
    std::vector<int> states;
    std::vector<uint4> shared; /* 16-byte aligned */
    int current;
};

emulator emu;

void thread_entry(int tid) {
    (*emu.body)();
    emu.states[tid] = FINISHED;
} /* returns to emu.scheduler through uc_link */

/* Runs every thread of the current block to its next barrier or its end. */
void run_phase(bool descending) {
    const int n = (int)blockDim.x;
    for (int i = 0; i < n; i++) {
        const int t = descending ? n - 1 - i : i;
        if (emu.states[t] == FINISHED) continue;
        emu.states[t] = RUNNING;
        emu.current = t;
        threadIdx.x = (unsigned)t;
        swapcontext(&emu.scheduler, &emu.contexts[t]);
    }
}

} // namespace

void __syncthreads() {
    const int t = emu.current;
    emu.states[t] = AT_BARRIER;
    swapcontext(&emu.contexts[t], &emu.scheduler);
}

unsigned char *gpu_emulated_shared() { return (unsigned char *)emu.shared.data(); }

/* Runs block blockIdx to its end; 0, or -1 on a barrier some threads skip. */
static int run_block(int n) {
    memset(emu.shared.data(), 0xff, emu.shared.size() * sizeof(uint4));
    for (int t = 0; t < n; t++) {
        getcontext(&emu.contexts[t]);
        emu.contexts[t].uc_stack.ss_sp = emu.stacks[t].data();
        emu.contexts[t].uc_stack.ss_size = stack_bytes;
        emu.contexts[t].uc_link = &emu.scheduler;
        makecontext(&emu.contexts[t], (void (*)())thread_entry, 1, t);
        emu.states[t] = RUNNING;
    }
    for (bool descending = false;; descending = !descending) {
        run_phase(descending);
        int waiting = 0, finished = 0;
        for (int t = 0; t < n; t++) (emu.states[t] == FINISHED ? finished : waiting)++;
        if (waiting == 0) return 0;
        if (finished != 0) {
            fprintf(stderr, "gpu_emulate: block (%u, %u, %u): %d threads wait at a barrier that "
                    "%d others never reach\n", blockIdx.x, blockIdx.y, blockIdx.z, waiting, finished);
            return -1;
        }
    }
}

int gpu_emulate_launch(const std::function<void()> &body, const int64_t grid[3], int threads,
                       size_t smem) {
    const int n = threads;
    emu.body = &body;
    emu.contexts.resize(n);
    emu.states.assign(n, FINISHED);
    if ((int)emu.stacks.size() < n) emu.stacks.resize(n, std::vector<char>(stack_bytes));
    emu.shared.resize(smem / sizeof(uint4) + 1);
    blockDim = dim3{(unsigned)n, 1, 1};
    gridDim = dim3{(unsigned)grid[0], (unsigned)grid[1], (unsigned)grid[2]};
    threadIdx = blockIdx = dim3{0, 0, 0};
    for (unsigned z = 0; z < gridDim.z; z++)
        for (unsigned y = 0; y < gridDim.y; y++)
            for (unsigned x = 0; x < gridDim.x; x++) {
                blockIdx = dim3{x, y, z};
                if (run_block(n) != 0) return -1;
            }
    return 0;
}
#endif /* GPU_EMULATE_AVAILABLE */
