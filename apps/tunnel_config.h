/* SPDX-License-Identifier: MIT */
/* `quack tunnel MODE --config FILE`: an INI file's keys as options (the
 * long options' names without dashes), placed before the command line's so
 * that the command line wins. */
#ifndef QK_APPS_TUNNEL_CONFIG_H
#define QK_APPS_TUNNEL_CONFIG_H

#include <stddef.h>

/** The arguments parse() reads: argv[0] "tunnel", argv[1] the mode, then
 * the file's options, then the command line's. */
typedef struct tun_argv {
    int argc;
    char **argv;
    const char **where; /**< per argument: "FILE line N" when it came from the file, else NULL */
    char **owned;       /**< strings made here (freed by tun_argv_free) */
    size_t n_owned, cap_owned;
} tun_argv;

/**
 * Merge --config FILE (if argv has it) into out. flags: the options that
 * take no value (names without dashes, NULL-terminated), given in the file
 * as KEY = yes|no. Keys given on the command line are skipped in the file
 * (all of a repeated one; --pin and --insecure count as one). Returns 0, or
 * 2 after printing a usage error (unreadable file, unknown section, bad
 * yes/no, --config inside the file).
 */
int tun_config_merge(int argc, char **argv, const char *const *flags, tun_argv *out);

/** Free what tun_config_merge made. */
void tun_argv_free(tun_argv *a);

#endif
