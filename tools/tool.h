/* The subcommands of the dwconv tool. Each returns the process exit status. */
#ifndef DWCONV_TOOL_H
#define DWCONV_TOOL_H

int cmd_info(int argc, char **argv);
int cmd_bench(int argc, char **argv);

#endif
