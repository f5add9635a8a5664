/*
 * app/main.c — the `widen` command line: dispatches to the subcommands of app/commands.h.
 */
#include <stdio.h>
#include <string.h>

#include "app/commands.h"

typedef struct {
  const char *name;
  int (*fn)(int, char **);
  const char *about;
} wd_command_t;

static const wd_command_t COMMANDS[] = {
    {"simulate", wd_cmd_simulate, "run a conformance case through the merge engine and store"},
};

static void usage(FILE *f) {
  fprintf(f, "usage: widen COMMAND [OPTIONS]   (widen COMMAND --help for its options)\n\ncommands:\n");
  for (size_t i = 0; i < sizeof(COMMANDS) / sizeof(*COMMANDS); i++)
    fprintf(f, "  %-10s %s\n", COMMANDS[i].name, COMMANDS[i].about);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0); /* LSan _exits on reporting (toolchain-notes §7) */
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 1 : 0;
  }
  for (size_t i = 0; i < sizeof(COMMANDS) / sizeof(*COMMANDS); i++)
    if (strcmp(argv[1], COMMANDS[i].name) == 0) return COMMANDS[i].fn(argc - 1, argv + 1);
  fprintf(stderr, "widen: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return 1;
}
