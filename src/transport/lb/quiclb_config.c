/* SPDX-License-Identifier: MIT */
/* QUIC-LB configuration files (INI via libinih): one [quic-lb] section with
 * the parameters of draft-ietf-quic-load-balancers-21 §5.3 (config ID,
 * server ID, nonce length, optional key) checked against its limits, every
 * error naming the file, the line and the fix. */
#include <quack/quiclb.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/abi.h"

#include <ini.h>

#define QK_QUICLB_MAX_FILE_BYTES (64u * 1024u)

enum {
    K_CONFIG_ID,
    K_SERVER_ID,
    K_SERVER_ID_LEN,
    K_NONCE_LEN,
    K_KEY,
    K_ENCODE_LENGTH,
    K_COUNT,
};

static const char *const key_names[K_COUNT] = {
    "config_id", "server_id", "server_id_len", "nonce_len", "key", "encode_length",
};

#define KEY_LIST "config_id, server_id, server_id_len, nonce_len, key, encode_length"

typedef struct parse_ctx {
    qk_quiclb_config *cfg;
    const char *name;
    char *err;
    size_t err_cap;
    int rc;                   /* first error, 0 while none */
    int line;                 /* line the reader handed inih last */
    bool at_line_start;       /* the last chunk ended a line */
    int key_line[K_COUNT];    /* where each key was given (0 = not yet) */
    bool any_section;         /* a [quic-lb] header was seen */
    uint8_t server_id_bytes;  /* length of server_id as given */
    uint8_t server_id_len_kv; /* server_id_len as given */
    const char *text;         /* the reader's input */
    size_t len, pos;
} parse_ctx;

__attribute__((format(printf, 3, 4))) static int perr(parse_ctx *p, int line, const char *fmt, ...)
{
    if (p->rc) return p->rc; /* keep the first problem */
    p->rc = QK_ERR_CONFIG;
    if (!p->err || !p->err_cap) return p->rc;
    int n = line > 0 ? snprintf(p->err, p->err_cap, "%s:%d: ", p->name, line)
                     : snprintf(p->err, p->err_cap, "%s: ", p->name);
    if (n < 0 || (size_t)n >= p->err_cap) return p->rc;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err + n, p->err_cap - (size_t)n, fmt, ap);
    va_end(ap);
    return p->rc;
}

/* inih reader over memory that counts lines (like fgets: at most size - 1
 * bytes, through the first newline). */
static char *read_chunk(char *buf, int size, void *stream)
{
    parse_ctx *p = stream;
    if (p->pos >= p->len || size < 2) return NULL;
    size_t n = 0, cap = (size_t)size - 1;
    while (n < cap && p->pos < p->len) {
        char c = p->text[p->pos++];
        buf[n++] = c;
        if (c == '\n') break;
    }
    buf[n] = '\0';
    if (p->at_line_start) p->line++;
    p->at_line_start = buf[n - 1] == '\n';
    if (!p->at_line_start && p->pos < p->len) {
        perr(p, p->line, "line longer than %d characters: shorten it", size - 2);
        return NULL; /* stop: inih would read the rest as another line */
    }
    return buf;
}

/* A decimal integer in lo..hi; false for anything else. */
static bool parse_uint(const char *v, unsigned lo, unsigned hi, unsigned *out)
{
    if (!*v) return false;
    unsigned x = 0;
    for (; *v; v++) {
        if (*v < '0' || *v > '9') return false;
        x = x * 10u + (unsigned)(*v - '0');
        if (x > hi) return false;
    }
    if (x < lo) return false;
    *out = x;
    return true;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Hex bytes, optionally "0x"-prefixed or ':'-separated between whole bytes
 * (App. A writes keys as 8f:95:...). The byte count, or -1 when v is not
 * such hex, or cap + 1 when it holds more than cap bytes. */
static int parse_hex(const char *v, uint8_t *out, size_t cap)
{
    if (v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) v += 2;
    size_t n = 0, digits = 0;
    for (; *v; v++) {
        if (*v == ':') {
            if (digits == 0 || digits % 2 || v[-1] == ':' || !v[1]) return -1;
            continue;
        }
        int d = hex_digit(*v);
        if (d < 0) return -1;
        if (digits % 2 == 0) {
            if (n == cap) return (int)cap + 1;
            out[n++] = (uint8_t)(d << 4);
        } else {
            out[n - 1] |= (uint8_t)d;
        }
        digits++;
    }
    if (digits == 0 || digits % 2) return -1;
    return (int)n;
}

static bool parse_bool(const char *v, bool *out)
{
    static const char *const yes[] = {"yes", "true", "on", "1"}, *const no[] = {"no", "false",
                                                                                "off", "0"};
    for (size_t i = 0; i < 4; i++) {
        if (!strcasecmp(v, yes[i])) return *out = true, true;
        if (!strcasecmp(v, no[i])) return *out = false, true;
    }
    return false;
}

static int set_hex_key(parse_ctx *p, int k, const char *v)
{
    uint8_t buf[QK_QUICLB_MAX_SERVER_ID_BYTES + 2];
    size_t cap = k == K_KEY ? QK_QUICLB_KEY_BYTES : QK_QUICLB_MAX_SERVER_ID_BYTES;
    int n = parse_hex(v, buf, cap);
    if (k == K_KEY) {
        if (n < 0)
            return perr(p, p->line, "key is not hex: give 16 bytes as 32 hex digits (0-9, a-f)");
        if (n != QK_QUICLB_KEY_BYTES)
            return perr(p, p->line,
                        "key must be 16 bytes (32 hex digits), got %s%d: AES-128 takes a "
                        "16-byte key",
                        n > (int)cap ? "more than " : "", n > (int)cap ? (int)cap : n);
        memcpy(p->cfg->key, buf, QK_QUICLB_KEY_BYTES);
        p->cfg->has_key = true;
        return 0;
    }
    if (n < 0)
        return perr(p, p->line,
                    "server_id is not hex: give 1..15 bytes as hex digits, e.g. server_id = 0a1b");
    if (n > (int)cap) return perr(p, p->line, "server_id is longer than 15 bytes: use 1..15 bytes");
    memcpy(p->cfg->server_id, buf, (size_t)n);
    p->server_id_bytes = (uint8_t)n;
    return 0;
}

static int set_key(parse_ctx *p, int k, const char *v)
{
    unsigned x;
    switch (k) {
    case K_CONFIG_ID:
        /* §3.1: three bits; 0b111 is reserved for unroutable CIDs. */
        if (!parse_uint(v, 0, QK_QUICLB_MAX_CONFIG_ID, &x))
            return perr(p, p->line,
                        "config_id = %s is out of range: use 0..6 (7, 0b111, marks unroutable "
                        "CIDs)",
                        v);
        p->cfg->config_id = (uint8_t)x;
        return 0;
    case K_SERVER_ID_LEN:
        if (!parse_uint(v, QK_QUICLB_MIN_SERVER_ID_BYTES, QK_QUICLB_MAX_SERVER_ID_BYTES, &x))
            return perr(p, p->line, "server_id_len = %s is out of range: use 1..15 bytes", v);
        p->server_id_len_kv = (uint8_t)x;
        return 0;
    case K_NONCE_LEN:
        if (!parse_uint(v, QK_QUICLB_MIN_NONCE_BYTES, QK_QUICLB_MAX_NONCE_BYTES, &x))
            return perr(p, p->line, "nonce_len = %s is out of range: use 4..18 bytes", v);
        p->cfg->nonce_len = (uint8_t)x;
        return 0;
    case K_ENCODE_LENGTH:
        if (!parse_bool(v, &p->cfg->encode_len))
            return perr(p, p->line, "encode_length = %s: use yes or no", v);
        return 0;
    default: return set_hex_key(p, k, v);
    }
}

/* One key = value line: 0 or QK_ERR_CONFIG (p->err says why). */
static int on_key(parse_ctx *p, const char *section, const char *name, const char *value)
{
    if (strcmp(section, "quic-lb") != 0) {
        if (!*section)
            return perr(p, p->line, "'%s' is outside a section: put it under [quic-lb]", name);
        return perr(p, p->line, "unknown section [%s]: the only section is [quic-lb]", section);
    }
    p->any_section = true;
    int k = 0;
    while (k < K_COUNT && strcmp(name, key_names[k]) != 0) k++;
    if (k == K_COUNT)
        return perr(p, p->line, "unknown key '%s' in [quic-lb]: the keys are " KEY_LIST, name);
    if (p->key_line[k])
        return perr(p, p->line, "'%s' given twice (first on line %d): keep one", name,
                    p->key_line[k]);
    p->key_line[k] = p->line;
    return set_key(p, k, value);
}

/* The inih handler: nonzero to go on. */
static int on_kv(void *user, const char *section, const char *name, const char *value)
{
    parse_ctx *p = user;
    return !p->rc && on_key(p, section, name, value) == 0;
}

/* After the last line: required keys, agreement of server_id and
 * server_id_len, and the limits of §5.3. */
static int finish(parse_ctx *p)
{
    if (!p->any_section)
        return perr(
            p, 0,
            "no keys in a [quic-lb] section: add one with config_id, server_id and nonce_len");
    if (!p->key_line[K_CONFIG_ID])
        return perr(p, 0, "missing config_id in [quic-lb]: add config_id = 0..6");
    if (!p->key_line[K_NONCE_LEN])
        return perr(p, 0, "missing nonce_len in [quic-lb]: add nonce_len = 4..18");
    if (!p->key_line[K_SERVER_ID] && !p->key_line[K_SERVER_ID_LEN])
        return perr(p, 0,
                    "missing server_id in [quic-lb]: add server_id = HEX (a load balancer may "
                    "give server_id_len = N instead)");
    if (p->key_line[K_SERVER_ID] && p->key_line[K_SERVER_ID_LEN] &&
        p->server_id_bytes != p->server_id_len_kv)
        return perr(p, p->key_line[K_SERVER_ID_LEN],
                    "server_id_len = %u but server_id (line %d) has %u bytes: make them agree "
                    "or drop server_id_len",
                    p->server_id_len_kv, p->key_line[K_SERVER_ID], p->server_id_bytes);
    p->cfg->server_id_len = p->key_line[K_SERVER_ID] ? p->server_id_bytes : p->server_id_len_kv;
    char why[200];
    if (qk_quiclb_config_check(p->cfg, why, sizeof why))
        return perr(p, p->key_line[K_NONCE_LEN], "%s", why);
    return 0;
}

static int parse(const char *text, size_t len, const char *name, qk_quiclb_config *cfg, char *err,
                 size_t err_cap)
{
    qk_quiclb_config_default(cfg);
    parse_ctx p = {.cfg = cfg,
                   .name = name ? name : "(config)",
                   .err = err,
                   .err_cap = err_cap,
                   .at_line_start = true,
                   .text = text,
                   .len = len};
    int r = ini_parse_stream(read_chunk, &p, on_kv, &p);
    if (p.rc) return p.rc;
    if (r > 0)
        return perr(&p, r, "syntax error: lines are [quic-lb], key = value, or ; comment"), p.rc;
    if (r < 0) {
        if (err && err_cap) snprintf(err, err_cap, "%s: out of memory", p.name);
        return QK_ERR_NOMEM;
    }
    return finish(&p);
}

int qk_quiclb_config_parse_sized(const char *text, size_t len, const char *name,
                                 qk_quiclb_config *cfg, size_t cfg_bytes, char *err, size_t err_cap)
{
    if (err && err_cap) err[0] = '\0';
    if (!text || !cfg) return QK_ERR_INVALID_ARG;
    qk_quiclb_config full;
    int rc = parse(text, len, name, &full, err, err_cap);
    qk_abi_copy_out(cfg, cfg_bytes, &full, sizeof full);
    return rc;
}

int qk_quiclb_config_load_sized(const char *path, qk_quiclb_config *cfg, size_t cfg_bytes,
                                char *err, size_t err_cap)
{
    if (err && err_cap) err[0] = '\0';
    if (!path || !cfg) return QK_ERR_INVALID_ARG;
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (err && err_cap) snprintf(err, err_cap, "%s: cannot open: %s", path, strerror(errno));
        return QK_ERR_IO;
    }
    char *buf = malloc(QK_QUICLB_MAX_FILE_BYTES + 1);
    if (!buf) {
        fclose(f);
        return QK_ERR_NOMEM;
    }
    size_t n = fread(buf, 1, QK_QUICLB_MAX_FILE_BYTES + 1, f);
    int rd_err = ferror(f);
    fclose(f);
    int rc;
    if (rd_err) {
        if (err && err_cap) snprintf(err, err_cap, "%s: cannot read", path);
        rc = QK_ERR_IO;
    } else if (n > QK_QUICLB_MAX_FILE_BYTES) {
        if (err && err_cap)
            snprintf(err, err_cap, "%s: larger than 64 KiB: is this the QUIC-LB file?", path);
        rc = QK_ERR_TOO_LARGE;
    } else {
        rc = qk_quiclb_config_parse_sized(buf, n, path, cfg, cfg_bytes, err, err_cap);
    }
    free(buf);
    return rc;
}
