/*
 * app/cli/cli.c — getopt_long with a did-you-mean for the subcommands (app/cli/cli.h).
 */
#include "app/cli/cli.h"

#include <stdio.h>
#include <string.h>

#include "common/text.h"

int wd_cli_getopt(const char *cmd, int argc, char **argv, const char *shortopts, const struct option *longopts) {
  opterr = 0;
  int prev = optind;
  int ch = getopt_long(argc, argv, shortopts, longopts, NULL);
  if (ch != '?') return ch;
  /* the argument getopt stopped at: optind has moved past it (or stays on it mid-cluster) */
  const char *arg = optind > prev && optind - 1 < argc ? argv[optind - 1] : prev < argc ? argv[prev] : "";
  if (!strncmp(arg, "--", 2)) {
    char name[128];
    size_t n = strcspn(arg + 2, "=");
    snprintf(name, sizeof(name), "%.*s", (int)(n < sizeof(name) - 1 ? n : sizeof(name) - 1), arg + 2);
    const char *names[64];
    size_t nn = 0;
    for (const struct option *o = longopts; o && o->name && nn < 64; o++) {
      if (!strcmp(o->name, name) && o->has_arg == required_argument) {
        fprintf(stderr, "widen %s: option '--%s' needs a value\n", cmd, name);
        return ch;
      }
      names[nn++] = o->name;
    }
    const char *near = wd_closest(name, names, nn);
    if (near) fprintf(stderr, "widen %s: unknown option '--%s'; did you mean '--%s'?\n", cmd, name, near);
    else fprintf(stderr, "widen %s: unknown option '--%s' (widen %s --help lists the options)\n", cmd, name, cmd);
    return ch;
  }
  if (optopt && strchr(shortopts, optopt)) fprintf(stderr, "widen %s: option '-%c' needs a value\n", cmd, optopt);
  else if (optopt) fprintf(stderr, "widen %s: unknown option '-%c'\n", cmd, optopt);
  else fprintf(stderr, "widen %s: unknown option '%s'\n", cmd, arg);
  return ch;
}
