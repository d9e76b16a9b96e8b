/* SPDX-License-Identifier: MIT */
/* The CLI's shared options (see cli_options.h). */
#include "cli_options.h"
#include "cli_errors.h"

#include <stdarg.h>
#include <quack/cert.h>
#include <quack/sim.h>

#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

void cli_rng(void *ctx, uint8_t *buf, size_t len)
{
    (void)ctx;
    while (len) {
        ssize_t r = getrandom(buf, len, 0);
        if (r < 0) {
            if (errno == EINTR) continue;
            abort(); /* no randomness: nothing safe to do */
        }
        buf += r;
        len -= (size_t)r;
    }
}

int cli_parse_size(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    if (!s || !*s || *s == '-') return QK_ERR_INVALID_ARG;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s) return QK_ERR_INVALID_ARG;
    unsigned shift = 0;
    switch (*end) {
    case 'k':
    case 'K':
        shift = 10;
        end++;
        break;
    case 'm':
    case 'M':
        shift = 20;
        end++;
        break;
    case 'g':
    case 'G':
        shift = 30;
        end++;
        break;
    default: break;
    }
    if (*end == 'i' || *end == 'B') end++;
    if (*end == 'B') end++;
    if (*end) return QK_ERR_INVALID_ARG;
    if (shift && v > (UINT64_MAX >> shift)) return QK_ERR_INVALID_ARG;
    *out = (uint64_t)v << shift;
    return 0;
}

typedef struct col {
    qk_time *ns;  /* durations */
    double *tput; /* throughputs */
} col;

int cli_parse_preferred(const char *s, qk_addr *v4_out, qk_addr *v6_out)
{
    qk_addr a;
    if (!s || qk_addr_parse(s, &a) || !qk_addr_port(&a)) return QK_ERR_INVALID_ARG;
    qk_addr v4;
    qk_addr *dst = qk_addr_unmap_v4(&a, &v4) ? v4_out : v6_out; /* IPv4 or v4-mapped */
    if (dst->len) return QK_ERR_LIMIT;
    *dst = a;
    return 0;
}

void cli_listen_error(const char *who, const qk_config *cfg, const char *addr_str, int rc,
                      unsigned which)
{
    if (rc == QK_ERR_CONFIG) {
        char why[256];
        qk_config_check(cfg, why, sizeof why);
        fprintf(stderr, "%s: invalid configuration: %s\n", who, why);
        return;
    }
    const char *err = rc == QK_ERR_NOMEM ? "out of memory" : strerror(errno);
    if (which == QK_WORKERS_SOCKET_PREFERRED_V4 || which == QK_WORKERS_SOCKET_PREFERRED_V6) {
        const qk_addr *a = which == QK_WORKERS_SOCKET_PREFERRED_V4 ? &cfg->preferred_addr_v4
                                                                   : &cfg->preferred_addr_v6;
        char buf[QK_ADDR_STRLEN] = "?";
        qk_addr_format(a, buf, sizeof buf);
        fprintf(stderr, "%s: --preferred-addr %s: cannot listen there: %s\n", who, buf, err);
        return;
    }
    fprintf(stderr, "%s: cannot listen on %s: %s\n", who, addr_str, err);
}

qk_endpoint *cli_endpoint_new(const qk_config *cfg, const char *who)
{
    qk_endpoint *ep = qk_endpoint_new(cfg);
    if (ep) return ep;
    char why[256];
    if (qk_config_check(cfg, why, sizeof why))
        fprintf(stderr, "%s: invalid configuration: %s\n", who, why);
    else
        fprintf(stderr, "%s: cannot create the endpoint: out of memory\n", who);
    return NULL;
}

int cli_parse_version(const char *s, uint32_t *v)
{
    if (!strcmp(s, "v1") || !strcmp(s, "v2")) {
        *v = s[1] == '1' ? QK_VERSION_1 : QK_VERSION_2;
        return 0;
    }
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 0);
    if (errno || end == s || *end || x > 0xffffffffull || s[0] == '-') return QK_ERR_INVALID_ARG;
    *v = (uint32_t)x;
    return 0;
}

int cli_parse_key_update(const char *arg, uint64_t *pkts)
{
    if (!strcmp(arg, "--key-update")) {
        *pkts = QK_CLI_KEY_UPDATE_PKTS;
        return 0;
    }
    if (strncmp(arg, "--key-update=", 13)) return 1;
    const char *v = arg + 13;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno || end == v || *end || n == 0 || v[0] == '-') return QK_ERR_INVALID_ARG;
    *pkts = n;
    return 0;
}

int cli_parse_cc(const char *s, qk_cc_kind *out)
{
    return qk_cc_kind_parse(s, out);
}

/* Certificate: the given files, or a fresh self-signed P-256 one in memory. */
int cli_load_cert(const char *who, const char *cert_file, const char *key_file, qk_config *cfg,
                  char **cert_pem, char **key_pem)
{
    uint8_t pin[QK_PIN_BYTES];
    char hex[65];
    int rc;
    if (cert_file) {
        cfg->cert_file = cert_file;
        cfg->key_file = key_file;
        rc = qk_cert_pin_file(cert_file, pin);
        if (rc) {
            fprintf(stderr, "%s: cannot read certificate %s (error %d)\n", who, cert_file, rc);
            return rc;
        }
    } else {
        rc = qk_cert_generate("localhost", (int64_t)time(NULL) - 3600, 30, cert_pem, key_pem);
        if (rc) {
            fprintf(stderr, "%s: cannot generate a certificate (error %d)\n", who, rc);
            return rc;
        }
        cfg->cert_pem = *cert_pem;
        cfg->key_pem = *key_pem;
        qk_cert_pin_pem(*cert_pem, strlen(*cert_pem), pin);
    }
    qk_pin_to_hex(pin, hex);
    printf("pin: %s\n", hex);
    return 0;
}

int cli_parse_admission(cli_admission *a, int argc, char **argv, int *i, const char *who)
{
    const char *o = argv[*i];
    if (!strcmp(o, "--retry")) {
        const char *v = *i + 1 < argc ? argv[*i + 1] : "";
        a->retry_set = true;
        a->retry = QK_RETRY_ALWAYS; /* bare --retry, as before */
        if (!strcmp(v, "auto") || !strcmp(v, "always") || !strcmp(v, "never")) {
            a->retry = v[1] == 'u' ? QK_RETRY_AUTO : v[1] == 'l' ? QK_RETRY_ALWAYS : QK_RETRY_NEVER;
            ++*i;
        }
        return 1;
    }
    if (strcmp(o, "--max-handshakes") && strcmp(o, "--handshake-timeout") &&
        strcmp(o, "--max-connections"))
        return 0;
    if (*i + 1 >= argc) {
        fprintf(stderr, "%s: %s needs a value\n", who, o);
        return -1;
    }
    const char *v = argv[++*i];
    if (strcmp(o, "--handshake-timeout")) { /* --max-handshakes, --max-connections: a count */
        char *end;
        unsigned long long n = strtoull(v, &end, 10);
        if (*end || n < 1 || n > (1ull << 24)) {
            fprintf(stderr, "%s: %s wants 1..16777216, not '%s'\n", who, o, v);
            return -1;
        }
        if (!strcmp(o, "--max-connections")) {
            a->max_connections = (size_t)n;
            a->conns_set = true;
        } else {
            a->max_handshakes = (size_t)n;
            a->max_set = true;
        }
    } else {
        if (qk_sim_parse_time(v, &a->handshake_timeout_ns) || !a->handshake_timeout_ns) {
            fprintf(stderr, "%s: --handshake-timeout wants a time, e.g. 5s or 500ms, not '%s'\n",
                    who, v);
            return -1;
        }
        a->timeout_set = true;
    }
    return 1;
}

void cli_admission_apply(const cli_admission *a, qk_config *cfg)
{
    if (a->retry_set) cfg->retry = a->retry; /* RFC 9000 §8.1.2 */
    if (a->max_set) cfg->max_handshakes = a->max_handshakes;
    if (a->timeout_set) cfg->handshake_timeout_ns = a->handshake_timeout_ns;
    if (a->conns_set) cfg->max_connections = a->max_connections;
}

const char **cli_str_opt_find(const cli_str_opt *tab, const char *a)
{
    for (; tab->name; tab++)
        if (!strcmp(tab->name, a)) return tab->dst;
    return NULL;
}

const char **cli_h3_opt(cli_h3_opts *o, const char *a)
{
    const cli_str_opt tab[] = {{"--qlog", &o->qlog},       {"--keylog", &o->keylog},
                               {"--cc", &o->cc},           {"--quic-version", &o->version},
                               {"--ciphers", &o->ciphers}, {NULL, NULL}};
    return cli_str_opt_find(tab, a);
}

int cli_h3_flag(const char *cmd, cli_h3_opts *o, const char *a)
{
    if (!strcmp(a, "--ecn"))
        o->ecn = true;
    else if (!strcmp(a, "--no-gso"))
        o->no_gso = true;
    else if (!strcmp(a, "--no-early-data"))
        o->no_early_data = true;
    else if (!strncmp(a, "--key-update", 12)) {
        if (cli_parse_key_update(a, &o->key_update_pkts))
            return cli_usage_error(cmd, "%s: want --key-update or --key-update=N (N >= 1 packets)",
                                   a);
    } else
        return 0;
    return 1;
}

int cli_h3_apply(const char *who, const cli_h3_opts *o, qk_config *cfg)
{
    if (cli_check_dir(who, "--qlog", o->qlog)) return 2;
    if (qk_io_log_files(cfg, o->qlog, o->keylog)) {
        fprintf(stderr, "%s: --keylog %s (or $SSLKEYLOGFILE): cannot open it for appending\n", who,
                o->keylog ? o->keylog : getenv("SSLKEYLOGFILE"));
        return 2;
    }
    if (o->cc && qk_cc_kind_parse(o->cc, &cfg->cc)) { /* default: cubic */
        fprintf(stderr, "%s: --cc %s: use one of %s\n", who, o->cc, qk_cc_kind_names());
        return 2;
    }
    /* qk_endpoint_new explains an unsupported one (qk_config_check). */
    if (o->version && cli_parse_version(o->version, &cfg->version)) {
        fprintf(stderr, "%s: --quic-version %s: want v1, v2 or a number\n", who, o->version);
        return 2;
    }
    cfg->key_update_after_pkts = o->key_update_pkts; /* RFC 9001 §6.1 */
    cfg->ecn = o->ecn;
    cfg->early_data = !o->no_early_data; /* RFC 9001 §4.6 */
    cfg->ciphers = o->ciphers;
    /* A version or cipher list the library refuses is a usage error: name
     * the option (qk_config_check's text says what it accepts). */
    char why[300];
    if (qk_config_check(cfg, why, sizeof why) == 0) return 0;
    const char *opt = !strncmp(why, "version", 7)   ? "--quic-version"
                      : !strncmp(why, "ciphers", 7) ? "--ciphers"
                                                    : NULL;
    if (!opt) return 0; /* other fields: explained by cli_endpoint_new */
    fprintf(stderr, "%s: %s %s: %s\n", who, opt, opt[2] == 'q' ? o->version : o->ciphers, why);
    return 2;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "quack %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nRun 'quack %s --help' for the options.\n", cmd);
    return 2;
}

int cli_parse_handshake_timeout(const char *cmd, int argc, char **argv, int *i, cli_admission *a)
{
    const char *o = argv[*i];
    if (strcmp(o, "--handshake-timeout")) return 0;
    if (*i + 1 >= argc) return cli_usage_error(cmd, "%s needs a value", o);
    const char *v = argv[++*i];
    if (qk_sim_parse_time(v, &a->handshake_timeout_ns) || !a->handshake_timeout_ns)
        return cli_usage_error(cmd, "--handshake-timeout %s: want a time, e.g. 10s or 500ms", v);
    a->timeout_set = true;
    return 1;
}

int cli_parse_addr(const char *cmd, const char *opt, const char *value, qk_addr *out)
{
    int rc = qk_addr_parse(value, out);
    if (rc == 0) return 0;
    const char *colon = strrchr(value, ':');
    const char *bracket = strrchr(value, ']');
    if (!colon || (bracket && colon < bracket))
        return cli_usage_error(cmd, "%s %s: want HOST:PORT or [IPV6]:PORT", opt, value);
    if (rc == QK_ERR_NOT_FOUND) { /* not a usage error: the name may resolve later */
        fprintf(stderr, "quack %s: %s %s: cannot resolve the host name\n", cmd, opt, value);
        return 1;
    }
    char *end;
    unsigned long port = strtoul(colon + 1, &end, 10);
    if (!colon[1] || *end || port > 65535)
        return cli_usage_error(cmd, "%s %s: bad port '%s' (want 0..65535)", opt, value, colon + 1);
    return cli_usage_error(cmd, "%s %s: want HOST:PORT or [IPV6]:PORT", opt, value);
}

/* One decimal port, 1..65535, exactly len characters. */
static bool parse_port_str(const char *s, size_t len, uint16_t *out)
{
    if (!len || len > 5) return false;
    unsigned v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    if (!v || v > 65535) return false;
    *out = (uint16_t)v;
    return true;
}

int cli_parse_port_range(const char *v, char *addr, size_t cap, uint16_t *lo, uint16_t *hi)
{
    const char *colon = strrchr(v, ':');
    const char *dash = colon ? strchr(colon, '-') : NULL;
    if (!dash) return 0;
    if (!parse_port_str(colon + 1, (size_t)(dash - colon - 1), lo) ||
        !parse_port_str(dash + 1, strlen(dash + 1), hi) || *hi <= *lo)
        return QK_ERR_INVALID_ARG;
    if ((size_t)(dash - v) + 1 > cap) return QK_ERR_LIMIT;
    memcpy(addr, v, (size_t)(dash - v));
    addr[dash - v] = 0;
    return 1;
}

int cli_read_secret(const char *path, uint8_t *buf, size_t cap, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return QK_ERR_IO;
    size_t n = fread(buf, 1, cap, f);
    bool more = fgetc(f) != EOF;
    fclose(f);
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r')) n--;
    *len = n;
    return more || n < CLI_SECRET_MIN_BYTES ? QK_ERR_INVALID_ARG : 0;
}
