/*
 * app/cli/main.c — the `widen` command line: dispatches to the subcommands of app/cli/commands.h.
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "app/cli/commands.h"

#ifndef WD_VERSION
#define WD_VERSION "unknown"
#endif

typedef struct {
  const char *name;
  int (*fn)(int, char **);
  const char *about;
} wd_command_t;

static const wd_command_t COMMANDS[] = {
    {"demo", wd_cmd_demo, "the whole job on an in-process mock Kafka cluster, nothing to install"},
    {"run", wd_cmd_run, "the main job: source topics -> wide table state -> changelog topic"},
    {"replay", wd_cmd_replay, "rebuild the table from the source topics into a fresh state directory"},
    {"rows", wd_cmd_rows, "print the wide table's rows from a state directory"},
    {"simulate", wd_cmd_simulate, "run a conformance case through the merge engine and store"},
    {"config", wd_cmd_config, "check a pipeline config file, or print the option reference"},
    {"produce", wd_cmd_produce, "send a JSON-lines file or a generated CDC workload to Kafka"},
    {"tail", wd_cmd_tail, "print a changelog topic as JSON lines"},
    {"status", wd_cmd_status, "commit history, position, lag and state size (also while run runs)"},
    {"changes", wd_cmd_changes, "the net change of every key between two commits of the history"},
};

static void usage(FILE *f) {
  fprintf(f, "usage: widen COMMAND [OPTIONS]   (widen COMMAND --help for its options; widen --version)\n\n"
             "commands:\n");
  for (size_t i = 0; i < sizeof(COMMANDS) / sizeof(*COMMANDS); i++)
    fprintf(f, "  %-10s %s\n", COMMANDS[i].name, COMMANDS[i].about);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0); /* LSan _exits on reporting (toolchain-notes §7) */
  /* Least exposure: what widen creates (the state directory's files, which RocksDB
   * creates from its own threads with mode 0644 minus the umask, at any time; a --trace file) is
   * readable by its owner only: the user's umask with group and other bits added. */
  umask(umask(0) | 077);
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 1 : 0;
  }
  if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V") || !strcmp(argv[1], "version")) {
    printf("widen %s\n", WD_VERSION);
    return 0;
  }
  for (size_t i = 0; i < sizeof(COMMANDS) / sizeof(*COMMANDS); i++)
    if (strcmp(argv[1], COMMANDS[i].name) == 0) return COMMANDS[i].fn(argc - 1, argv + 1);
  fprintf(stderr, "widen: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return 1;
}
