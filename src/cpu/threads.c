/* How many OpenMP threads a call uses, and surviving fork().
 *
 * Small problems run on fewer threads than asked: starting a team costs microseconds
 * (milliseconds on a loaded machine), more than a tiny problem's work.
 *
 * OpenMP's threads do not survive fork(): in the child, the runtime still believes in
 * its thread pool, and the next parallel region with more than one thread waits for
 * threads that do not exist (libgomp). A child forked after dwconv ran a parallel
 * region therefore runs every call on one thread (a region of one thread is run by
 * the calling thread alone, which works). Python's multiprocessing and data loaders
 * fork like this. */
#include <config.h>

#include <pthread.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "fast.h"

enum { WORK_PER_THREAD = 1 << 16 }; /* tap products: tens of microseconds of work */

static _Atomic int used_threads; /* a region of several threads has run */
static _Atomic int forked;       /* this process is a child forked after that */
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void on_fork_child(void) {
    if (used_threads) forked = 1;
}

static void install_atfork(void) { pthread_atfork(NULL, NULL, on_fork_child); }

int dwconv_cpu_thread_count(int requested, double work) {
    pthread_once(&atfork_once, install_atfork);
#ifdef _OPENMP
    int nt = requested > 0 ? requested : omp_get_max_threads();
    if (forked) return 1;
    double useful = work / WORK_PER_THREAD;
    if (useful < nt) nt = useful < 1 ? 1 : (int)useful;
    if (nt > 1) used_threads = 1;
    return nt;
#else
    (void)requested, (void)work;
    return 1;
#endif
}

int dwconv_cpu_thread_index(void) {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}
