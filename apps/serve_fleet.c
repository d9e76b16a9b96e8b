/* SPDX-License-Identifier: MIT */
/* `quack serve --lb-config FILE --fleet-keys FILE` (serve_fleet.h). */
#include "serve_fleet.h"

#include <errno.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_options.h"

#define FLEET_SECRET_MAX_BYTES 64

int serve_fleet_opt(serve_fleet *f, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    const char **dst = !strcmp(a, "--lb-config")    ? &f->lb_config
                       : !strcmp(a, "--fleet-keys") ? &f->fleet_keys
                                                    : NULL;
    if (!strcmp(a, "--fleet-early-data") || !strcmp(a, "--no-bpf")) {
        *(!strcmp(a, "--no-bpf") ? &f->no_bpf : &f->fleet_early_data) = true;
        return 1;
    }
    if (!dst) return 0;
    if (*i + 1 >= argc) {
        cli_usage_error("serve", "%s needs a FILE", a);
        return 2;
    }
    *dst = argv[++*i];
    return 1;
}

/* The key file being read: key_id = N, secret = HEX (32..64 bytes). */
typedef struct keyfile {
    const char *path;
    bool have_id, have_secret;
    unsigned long key_id;
    uint8_t secret[FLEET_SECRET_MAX_BYTES];
    size_t secret_len;
    char err[256];
} keyfile;

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Hex (':' separators allowed) into out; the byte count or -1. */
static long parse_hex(const char *s, uint8_t *out, size_t cap)
{
    size_t n = 0;
    while (*s) {
        if (*s == ':') {
            s++;
            continue;
        }
        int hi = hexval(s[0]), lo = hi < 0 ? -1 : hexval(s[1]);
        if (hi < 0 || lo < 0 || n == cap) return -1;
        out[n++] = (uint8_t)(hi << 4 | lo);
        s += 2;
    }
    return (long)n;
}

static int keyfile_line(void *user, const char *section, const char *name, const char *value)
{
    keyfile *k = user;
    char *end;
    if (*section && strcmp(section, "fleet-keys")) {
        snprintf(k->err, sizeof k->err, "unknown section [%s]: use [fleet-keys] or none", section);
        return 0;
    }
    if (!strcmp(name, "key_id") && !k->have_id) {
        errno = 0;
        k->key_id = strtoul(value, &end, 10);
        if (*end || !*value || value[0] == '-' || errno || k->key_id > UINT32_MAX) {
            snprintf(k->err, sizeof k->err, "key_id = %s: want a number 0..4294967295", value);
            return 0;
        }
        k->have_id = true;
    } else if (!strcmp(name, "secret") && !k->have_secret) {
        long n = parse_hex(value, k->secret, sizeof k->secret);
        if (n < QK_FLEET_SECRET_MIN_BYTES) {
            snprintf(k->err, sizeof k->err,
                     "secret: want %d..%d bytes in hex (e.g. `head -c 32 /dev/urandom | "
                     "xxd -p -c 64`)",
                     QK_FLEET_SECRET_MIN_BYTES, FLEET_SECRET_MAX_BYTES);
            return 0;
        }
        k->secret_len = (size_t)n;
        k->have_secret = true;
    } else {
        snprintf(k->err, sizeof k->err, "%s: %s (the keys are key_id and secret, each once)", name,
                 !strcmp(name, "key_id") || !strcmp(name, "secret") ? "given twice"
                                                                    : "unknown key");
        return 0;
    }
    return 1;
}

static int load_keys(serve_fleet *f, qk_config *cfg)
{
    keyfile k = {.path = f->fleet_keys};
    FILE *fp = fopen(f->fleet_keys, "r");
    if (!fp) {
        fprintf(stderr, "quack serve: --fleet-keys %s: %s\n", f->fleet_keys, strerror(errno));
        return 2;
    }
    int rc = ini_parse_file(fp, keyfile_line, &k);
    fclose(fp);
    if (rc || !k.have_id || !k.have_secret) {
        if (!k.err[0] && rc > 0)
            snprintf(k.err, sizeof k.err, "line %d: not KEY = VALUE", rc);
        else if (!k.err[0])
            snprintf(k.err, sizeof k.err, "key_id = N and secret = HEX are both required");
        fprintf(stderr, "quack serve: --fleet-keys %s: %s\n", f->fleet_keys, k.err);
        memset(&k, 0, sizeof k);
        return 2;
    }
    int err = 0;
    rc = qk_fleet_static_key(k.secret, k.secret_len, cfg->static_key);
    if (!rc) {
        f->tk = qk_ticket_keys_new_from_secret(k.secret, k.secret_len, cfg->ticket_lifetime_ns, 0,
                                               &err);
        rc = f->tk ? 0 : err;
    }
    memset(&k.secret, 0, sizeof k.secret);
    if (rc) {
        fprintf(stderr, "quack serve: --fleet-keys %s: keys could not be derived (error %d)\n",
                f->fleet_keys, rc);
        return 1;
    }
    f->key_id = (unsigned)k.key_id;
    cfg->ticket_keys = f->tk;
    /* RFC 8446 §8, RFC 9001 §9.2: each server's anti-replay store sees only
     * its own ClientHellos; 0-RTT replayed to another one is not caught. */
    if (!f->fleet_early_data) cfg->early_data = false;
    return 0;
}

static int load_lb(serve_fleet *f, qk_config *cfg)
{
    qk_quiclb_config lc;
    char err[256] = "";
    int rc = qk_quiclb_config_load(f->lb_config, &lc, err, sizeof err);
    if (!rc && !lc.server_id_len) rc = QK_ERR_CONFIG;
    bool no_sid = true;
    for (unsigned i = 0; !rc && i < lc.server_id_len; i++) no_sid &= !lc.server_id[i];
    if (!rc && no_sid) {
        snprintf(err, sizeof err,
                 "server_id is missing or zero: a server needs its own ID "
                 "(server_id = HEX, server_id_len bytes)");
        rc = QK_ERR_CONFIG;
    }
    if (!rc) rc = qk_quiclb_new(&lc, &f->lb);
    if (rc) {
        fprintf(stderr, "quack serve: --lb-config %s: %s\n", f->lb_config,
                err[0] ? err : "not a usable QUIC-LB configuration");
        return rc == QK_ERR_IO || rc == QK_ERR_NOMEM ? 1 : 2;
    }
    cfg->quiclb = f->lb;
    cfg->cid_bytes = (uint8_t)qk_quiclb_cid_bytes(f->lb);
    int n = snprintf(f->summary, sizeof f->summary, "QUIC-LB config %u, server ID ", lc.config_id);
    for (unsigned i = 0; i < lc.server_id_len && n < 120; i++)
        n += snprintf(f->summary + n, sizeof f->summary - (size_t)n, "%02x", lc.server_id[i]);
    snprintf(f->summary + n, sizeof f->summary - (size_t)n, ", %s CIDs of %zu bytes",
             lc.has_key ? "encrypted" : "plaintext", qk_quiclb_cid_bytes(f->lb));
    memset(&lc, 0, sizeof lc);
    return 0;
}

int serve_fleet_apply(serve_fleet *f, qk_config *cfg)
{
    if (f->fleet_early_data && !f->fleet_keys)
        return cli_usage_error("serve", "%s", "--fleet-early-data goes with --fleet-keys FILE");
    if (f->lb_config) {
        int rc = load_lb(f, cfg);
        if (rc) return rc;
    }
    if (f->fleet_keys) {
        int rc = load_keys(f, cfg);
        if (rc) return rc;
    }
    if (f->lb_config || f->fleet_keys) {
        size_t n = strlen(f->summary);
        if (f->fleet_keys)
            snprintf(f->summary + n, sizeof f->summary - n, "%sfleet key %u, 0-RTT %s",
                     n ? "; " : "", f->key_id,
                     cfg->early_data ? "accepted (replays across servers not caught)" : "refused");
    }
    return 0;
}

void serve_fleet_free(serve_fleet *f)
{
    qk_quiclb_del(f->lb);
    f->lb = NULL;
    qk_ticket_keys_del(f->tk);
    f->tk = NULL;
}
