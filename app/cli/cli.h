/*
 * app/cli/cli.h — the subcommands' option parsing: getopt_long with widen's own messages for a bad
 * option: an unknown long option gets the closest known one as a did-you-mean
 * (`widen run --confg` -> "did you mean '--config'?"), a missing value names the option.
 */
#ifndef WD_CLI_H
#define WD_CLI_H

#include <getopt.h>

/* getopt_long(argc, argv, shortopts, longopts, NULL) (borrowed; same globals optind/optarg) with
 * getopt's own message turned off: on a bad option it prints one line to stderr, "widen <cmd>:
 * unknown option '--confg'; did you mean '--config'?" (the suggestion when a long option is
 * within a typo's distance, common/text.h wd_closest), "widen <cmd>: option '--config' needs a
 * value", or "widen <cmd>: unknown option '-x'", and returns '?' as getopt_long does; the caller
 * prints its usage after it. Returns what getopt_long returns. */
int wd_cli_getopt(const char *cmd, int argc, char **argv, const char *shortopts, const struct option *longopts);

#endif
