/* SPDX-License-Identifier: MIT */
/* `quack keygen`: a server key and self-signed certificate in a directory,
 * and the pin clients give to --pin (cli_identity.h). */
#include "cli_identity.h"
#include "commands.h"

#include <quack/cert.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: quack keygen --out DIR [--name NAME] [--days N] [--force]\n"
            "\n"
            "Makes a server identity: DIR/" CLI_IDENTITY_KEY " (ECDSA P-256, mode 0600) and\n"
            "DIR/" CLI_IDENTITY_CERT " (self-signed), DIR created (mode 0700) if needed, and\n"
            "prints \"pin: HEX\", the SHA-256 of the public key, which clients give to --pin.\n"
            "`quack tunnel server --state-dir DIR` serves with it (so does --cert\n"
            "DIR/" CLI_IDENTITY_CERT " --key DIR/" CLI_IDENTITY_KEY
            ", also for quack serve and quack perf server).\n"
            "\n"
            "  --out DIR      where to write (required)\n"
            "  --name NAME    the certificate's CN and DNS name (default localhost)\n"
            "  --days N       validity in days (default %u; clients that pin do not check it)\n"
            "  --force        replace a key DIR already has (its pin then changes)\n"
            "\n"
            "Exit status: 0 written; 1 DIR already has a key (without --force) or it\n"
            "could not be written; 2 bad options.\n",
            CLI_IDENTITY_DAYS);
}

static int bad(const char *what, const char *v)
{
    fprintf(stderr, "quack keygen: %s%s\nRun 'quack keygen --help' for the options.\n", what,
            v ? v : "");
    return 2;
}

int qk_cmd_keygen(int argc, char **argv)
{
    const char *out = NULL, *name = "localhost";
    unsigned long days = CLI_IDENTITY_DAYS;
    bool force = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--force")) {
            force = true;
            continue;
        }
        if (strcmp(a, "--out") && strcmp(a, "--name") && strcmp(a, "--days"))
            return bad("unknown option ", a);
        if (i + 1 >= argc) return bad(a, " needs a value");
        const char *v = argv[++i];
        char *end;
        if (!strcmp(a, "--out")) {
            out = v;
        } else if (!strcmp(a, "--name")) {
            if (!v[0] || strlen(v) > 253) return bad("--name wants a host name, not ", v);
            name = v;
        } else if ((days = strtoul(v, &end, 10)) < 1 || days > 36500 || *end) {
            return bad("--days wants 1..36500, not ", v);
        }
    }
    if (!out) return bad("--out DIR is required", NULL);
    int rc = cli_identity_write("quack keygen", out, name, (unsigned)days, force);
    if (rc) return 1;
    char cert[1100], key[1100], hex[65];
    uint8_t pin[QK_PIN_BYTES];
    cli_identity_paths(out, cert, sizeof cert, key, sizeof key);
    if (qk_cert_pin_file(cert, pin)) {
        fprintf(stderr, "quack keygen: cannot read back %s\n", cert);
        return 1;
    }
    qk_pin_to_hex(pin, hex);
    printf("key: %s\ncertificate: %s\npin: %s\n", key, cert, hex);
    return 0;
}
