/* Replays fuzz inputs through the harness without libFuzzer, so that the seeds (and
 * every crash a fuzz run found and saved there) are regression tests in each make
 * check, on any compiler. Arguments: files or folders; none: $srcdir/tests/fuzz/seeds.
 * A defect aborts (the harness prints the descriptor); no input at all is a failure. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_forward.h"

static int replayed, ignored;

static void replay_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(99);
    }
    static uint8_t data[1 << 16];
    size_t n = fread(data, 1, sizeof data, f);
    fclose(f);
    printf("replay %s (%zu bytes): ", path, n);
    fflush(stdout);
    LLVMFuzzerTestOneInput(data, n);
    printf("%s\n", fuzz_forward_outcome);
    replayed++;
    /* a seed the harness does not understand tests nothing: a typo must fail */
    if (strncmp(fuzz_forward_outcome, "ignored", 7) == 0) ignored++;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void replay_path(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) {
        perror(path);
        exit(99);
    }
    if (!S_ISDIR(st.st_mode)) {
        replay_file(path);
        return;
    }
    DIR *dir = opendir(path);
    if (!dir) {
        perror(path);
        exit(99);
    }
    char *names[4096];
    size_t count = 0;
    for (struct dirent *e; (e = readdir(dir)) && count < 4096;)
        if (e->d_name[0] != '.') names[count++] = strdup(e->d_name);
    closedir(dir);
    qsort(names, count, sizeof names[0], by_name); /* the same order everywhere */
    for (size_t i = 0; i < count; i++) {
        char file[4096];
        snprintf(file, sizeof file, "%s/%s", path, names[i]);
        if (stat(file, &st) == 0 && S_ISREG(st.st_mode)) replay_file(file);
        free(names[i]);
    }
}

int main(int argc, char **argv) {
    if (argc > 1) {
        for (int i = 1; i < argc; i++) replay_path(argv[i]);
    } else {
        const char *srcdir = getenv("srcdir");
        char seeds[4096];
        snprintf(seeds, sizeof seeds, "%s/tests/fuzz/seeds", srcdir ? srcdir : ".");
        replay_path(seeds);
    }
    if (replayed == 0) {
        fprintf(stderr, "replay: no inputs found\n");
        return 1;
    }
    if (ignored) {
        fprintf(stderr, "replay: %d of %d inputs are not descriptors the harness reads\n",
                ignored, replayed);
        return 1;
    }
    printf("replay: %d inputs, no defect\n", replayed);
    return 0;
}
