/*
 * app/cli/commands.h — the subcommands of the `widen` executable. Each takes the arguments after the
 * subcommand name (argv[0] is the subcommand) and returns the process exit status.
 */
#ifndef WD_COMMANDS_H
#define WD_COMMANDS_H

int wd_cmd_simulate(int argc, char **argv);
/* `widen run`, `widen replay`, `widen rows` (app/cli/cmd_run.c). */
int wd_cmd_run(int argc, char **argv);
int wd_cmd_replay(int argc, char **argv);
int wd_cmd_rows(int argc, char **argv);
/* `widen demo` (app/cli/cmd_demo.c). */
int wd_cmd_demo(int argc, char **argv);
/* `widen config check FILE | doc` (app/cli/cmd_config.c). */
int wd_cmd_config(int argc, char **argv);

/* `widen produce` (app/cli/cmd_produce.c) and `widen tail` (app/cli/cmd_tail.c). */
int wd_cmd_produce(int argc, char **argv);
int wd_cmd_tail(int argc, char **argv);

/* `widen status` and `widen changes` (app/cli/cmd_ops.c). */
int wd_cmd_status(int argc, char **argv);
int wd_cmd_changes(int argc, char **argv);

#endif
