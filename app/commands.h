/*
 * app/commands.h — the subcommands of the `widen` executable. Each takes the arguments after the
 * subcommand name (argv[0] is the subcommand) and returns the process exit status.
 */
#ifndef WD_COMMANDS_H
#define WD_COMMANDS_H

int wd_cmd_simulate(int argc, char **argv);

#endif
