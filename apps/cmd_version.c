/* SPDX-License-Identifier: MIT */
#include "commands.h"

#include <stdio.h>
#include <gnutls/gnutls.h>

int qk_cmd_version(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    printf("quack %s (QUIC v1; GnuTLS %s)\n", QK_PROJECT_VERSION, gnutls_check_version(NULL));
    return 0;
}
