/* dwconv: the command-line face of libdwconv. */
#include <stdio.h>
#include <string.h>

#include "dwconv.h"
#include "tool.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: dwconv <command> [options]\n"
            "  info     version, backends built, modules found or why not, devices, cpu\n"
            "  bench    time one convolution against a copy on the same backend and check it\n"
            "           against the scalar oracle (dwconv bench --help)\n"
            "  version  the library version\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *command = argv[1];
    if (strcmp(command, "info") == 0) return cmd_info(argc - 1, argv + 1);
    if (strcmp(command, "bench") == 0) return cmd_bench(argc - 1, argv + 1);
    if (strcmp(command, "version") == 0 || strcmp(command, "--version") == 0) {
        printf("dwconv %s\n", dwconv_version_string());
        return 0;
    }
    if (strcmp(command, "help") == 0 || strcmp(command, "--help") == 0 || strcmp(command, "-h") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "dwconv: unknown command '%s'\n", command);
    usage(stderr);
    return 2;
}
