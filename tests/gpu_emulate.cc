/* The emulator's scheduler and its bounded memory: see gpu_emulate.h. */
#include "gpu_emulate.h"

#include <stdio.h>
#include <string.h>

extern "C" {
#include "test_util.h"
}

dim3 threadIdx, blockIdx, blockDim, gridDim;

gpu_emulate_buffer::gpu_emulate_buffer(size_t n, size_t offset, size_t guard_bytes)
    : bytes(n), guard(guard_bytes) {
    at = (unsigned char *)gpu_emulate_guarded((n ? n : 1) + guard, offset, guard);
    if (at && guard) test_poison(region(), region_bytes());
}

#ifndef GPU_EMULATE_AVAILABLE
void __syncthreads() {}
void __syncwarp() {}
unsigned char *gpu_emulated_shared() { return NULL; }
int gpu_emulate_launch(const std::function<void()> &, const int64_t *, int, size_t) {
    fprintf(stderr, "gpu_emulate: this platform has no ucontext.h\n");
    return -1;
}
void *gpu_emulate_guarded(size_t, size_t, size_t) { return NULL; }
void gpu_emulate_unguard(void *) {}
#else
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <map>
#include <utility>
#include <vector>

namespace {

enum thread_state { RUNNING, AT_BARRIER, AT_WARP_BARRIER, FINISHED };

const int warp_threads = 32; /* GPU_WARP */

const size_t stack_bytes = 256 * 1024;
const unsigned char canary = 0xa5; /* beside the shared memory; its poison is 0xff */

/* Pages [base, base + bytes) with an inaccessible page at each end. */
struct fenced_pages {
    unsigned char *map = NULL, *lo = NULL, *hi = NULL; /* accessible: [lo, hi) */
    size_t map_bytes = 0;
};

struct emulator {
    const std::function<void()> *body;
    ucontext_t scheduler;
    std::vector<ucontext_t> contexts;
    std::vector<std::vector<char> > stacks;
    std::vector<int> states;
    fenced_pages arena;      /* holds the shared memory */
    unsigned char *shared;   /* this block's shared memory, 16-byte aligned */
    size_t shared_bytes;
    int current;
    bool in_block;
};

emulator emu;
std::map<void *, std::pair<void *, size_t> > guarded; /* data -> its mapping */

size_t page_size() { return (size_t)sysconf(_SC_PAGESIZE); }

/* A fault: say where, and end the test (the kernel touched memory it must not). */
void on_fault(int, siginfo_t *info, void *) {
    char line[256];
    const unsigned char *at = (const unsigned char *)info->si_addr;
    const bool near_shared =
        emu.in_block && at >= emu.arena.map && at < emu.arena.map + emu.arena.map_bytes;
    int n = snprintf(line, sizeof line,
                     "gpu_emulate: block (%u, %u, %u) thread %d touched %p: %s\n", blockIdx.x,
                     blockIdx.y, blockIdx.z, emu.current, info->si_addr,
                     near_shared ? "outside its shared memory" : "inaccessible memory (a guard)");
    if (n > 0) (void)!write(2, line, (size_t)n);
    _exit(1);
}

void catch_faults() {
    static bool done = false;
    if (done) return;
    done = true;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
}

/* At least `bytes` accessible bytes between two inaccessible pages. */
bool fence(fenced_pages *f, size_t bytes) {
    const size_t page = page_size(), inner = (bytes + page - 1) / page * page + page;
    if (f->map && (size_t)(f->hi - f->lo) >= inner) return true;
    if (f->map) munmap(f->map, f->map_bytes);
    f->map_bytes = inner + 2 * page;
    void *m = mmap(NULL, f->map_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        f->map = NULL;
        return false;
    }
    f->map = (unsigned char *)m;
    f->lo = f->map + page;
    f->hi = f->lo + inner;
    return mprotect(f->lo, inner, PROT_READ | PROT_WRITE) == 0;
}

bool canaries_intact(const unsigned char *from, const unsigned char *to) {
    for (const unsigned char *p = from; p < to; p++)
        if (*p != canary) return false;
    return true;
}

void thread_entry(int tid) {
    (*emu.body)();
    emu.states[tid] = FINISHED;
} /* returns to emu.scheduler through uc_link */

/* Runs every released thread of the current block to its next barrier or its end. */
void run_phase(bool descending) {
    const int n = (int)blockDim.x;
    for (int i = 0; i < n; i++) {
        const int t = descending ? n - 1 - i : i;
        if (emu.states[t] != RUNNING) continue;
        emu.current = t;
        threadIdx.x = (unsigned)t;
        swapcontext(&emu.scheduler, &emu.contexts[t]);
    }
}

/* Places this block's shared memory against the arena's upper or lower fence, poisons
 * it and fills the rest of the arena with canaries. */
void place_shared(bool against_top) {
    const size_t rounded = (emu.shared_bytes + 15) / 16 * 16;
    emu.shared = against_top ? emu.arena.hi - rounded : emu.arena.lo;
    memset(emu.arena.lo, canary, (size_t)(emu.arena.hi - emu.arena.lo));
    memset(emu.shared, 0xff, emu.shared_bytes);
}

} // namespace

void __syncthreads() {
    const int t = emu.current;
    emu.states[t] = AT_BARRIER;
    swapcontext(&emu.contexts[t], &emu.scheduler);
}

void __syncwarp() {
    const int t = emu.current;
    emu.states[t] = AT_WARP_BARRIER;
    swapcontext(&emu.contexts[t], &emu.scheduler);
}

/* After a phase (no thread running): releases every warp whose threads all wait at a
 * warp barrier; then, if none was, the block if all its threads wait at a block
 * barrier. 1: some released; 0: all finished; -1 (reported): a barrier that cannot be
 * passed. */
static int release_barriers(int n) {
    bool released = false;
    for (int w = 0; w < n; w += warp_threads) {
        const int end = w + warp_threads < n ? w + warp_threads : n;
        int at_warp = 0, others = 0;
        for (int t = w; t < end; t++) {
            at_warp += emu.states[t] == AT_WARP_BARRIER;
            others += emu.states[t] != AT_WARP_BARRIER;
        }
        if (at_warp == 0) continue;
        if (others != 0) {
            fprintf(stderr, "gpu_emulate: block (%u, %u, %u) warp %d: %d threads wait at a warp "
                    "barrier that %d others of the warp do not reach\n", blockIdx.x, blockIdx.y,
                    blockIdx.z, w / warp_threads, at_warp, others);
            return -1;
        }
        for (int t = w; t < end; t++) emu.states[t] = RUNNING;
        released = true;
    }
    if (released) return 1;
    int at_block = 0, finished = 0;
    for (int t = 0; t < n; t++) (emu.states[t] == FINISHED ? finished : at_block)++;
    if (at_block == 0) return 0;
    if (finished != 0) {
        fprintf(stderr, "gpu_emulate: block (%u, %u, %u): %d threads wait at a barrier that "
                "%d others never reach\n", blockIdx.x, blockIdx.y, blockIdx.z, at_block, finished);
        return -1;
    }
    for (int t = 0; t < n; t++) emu.states[t] = RUNNING;
    return 1;
}

unsigned char *gpu_emulated_shared() { return emu.shared; }

/* Thread t's context, to start at thread_entry (a function of its own: getcontext
 * returns like setjmp, and a loop around it draws gcc's -Wclobbered). */
static void start_thread(int t) {
    getcontext(&emu.contexts[t]);
    emu.contexts[t].uc_stack.ss_sp = emu.stacks[t].data();
    emu.contexts[t].uc_stack.ss_size = stack_bytes;
    emu.contexts[t].uc_link = &emu.scheduler;
    makecontext(&emu.contexts[t], (void (*)())thread_entry, 1, t);
    emu.states[t] = RUNNING;
}

/* Runs block blockIdx to its end; 0, or -1 on a barrier some threads skip or a write
 * beside the shared memory. */
static int run_block(int n) {
    place_shared((blockIdx.x + blockIdx.y + blockIdx.z) % 2 == 0);
    for (int t = 0; t < n; t++) start_thread(t);
    emu.in_block = true;
    for (bool descending = false;; descending = !descending) {
        run_phase(descending);
        const int r = release_barriers(n);
        if (r < 0) return -1;
        if (r == 0) break;
    }
    emu.in_block = false;
    if (!canaries_intact(emu.arena.lo, emu.shared) ||
        !canaries_intact(emu.shared + emu.shared_bytes, emu.arena.hi)) {
        fprintf(stderr, "gpu_emulate: block (%u, %u, %u) wrote beside its %zu bytes of shared "
                "memory\n", blockIdx.x, blockIdx.y, blockIdx.z, emu.shared_bytes);
        return -1;
    }
    return 0;
}

int gpu_emulate_launch(const std::function<void()> &body, const int64_t grid[3], int threads,
                       size_t smem) {
    const int n = threads;
    catch_faults();
    if (!fence(&emu.arena, smem)) {
        fprintf(stderr, "gpu_emulate: no memory for %zu bytes of shared memory\n", smem);
        return -1;
    }
    emu.body = &body;
    emu.shared_bytes = smem;
    emu.contexts.resize(n);
    emu.states.assign(n, FINISHED);
    if ((int)emu.stacks.size() < n) emu.stacks.resize(n, std::vector<char>(stack_bytes));
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

void *gpu_emulate_guarded(size_t bytes, size_t offset, size_t before) {
    catch_faults();
    const size_t page = page_size(), used = (offset + bytes + 15) / 16 * 16;
    const size_t inner = (before + used + page - 1) / page * page;
    void *m = mmap(NULL, inner + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return NULL;
    unsigned char *top = (unsigned char *)m + inner;
    if (mprotect(top, page, PROT_NONE) != 0) {
        munmap(m, inner + page);
        return NULL;
    }
    void *data = top - used + offset;
    guarded[data] = std::make_pair(m, inner + page);
    return data;
}

void gpu_emulate_unguard(void *p) {
    auto it = guarded.find(p);
    if (it == guarded.end()) return;
    munmap(it->second.first, it->second.second);
    guarded.erase(it);
}
#endif /* GPU_EMULATE_AVAILABLE */
