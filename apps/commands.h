/* SPDX-License-Identifier: MIT */
/* The quack CLI: one function per subcommand, each in apps/cmd_<name>.c. */
#ifndef QK_APPS_COMMANDS_H
#define QK_APPS_COMMANDS_H

/** A subcommand: argv[0] is the subcommand name. Returns the process exit code. */
typedef int (*qk_cmd_fn)(int argc, char **argv);

struct qk_cmd {
    const char *name;
    qk_cmd_fn fn;
    const char *summary;
};

/* Each cmd_*.c file defines one of these. */
int qk_cmd_version(int argc, char **argv);
int qk_cmd_sim(int argc, char **argv);
int qk_cmd_netem(int argc, char **argv);
int qk_cmd_perf(int argc, char **argv);
int qk_cmd_get(int argc, char **argv);
int qk_cmd_serve(int argc, char **argv);
int qk_cmd_tunnel(int argc, char **argv);
int qk_cmd_media(int argc, char **argv);
int qk_cmd_keygen(int argc, char **argv);

#endif
