/* SPDX-License-Identifier: MIT */
#include "commands.h"

#include <stdio.h>
#include <gnutls/gnutls.h>

int qk_cmd_version(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("quack 0.1.0 (QUIC v1; GnuTLS %s)\n", gnutls_check_version(NULL));
    return 0;
}
