/* SPDX-License-Identifier: MIT */
/*
 * TLS 1.3 for QUIC (RFC 9001 §4) on GnuTLS's QUIC hooks: handshake messages
 * leave through the read function into per-level buffers, enter through
 * gnutls_handshake_write(), secrets arrive through the secret function, and
 * alerts through the alert function. Nothing calls back into user code.
 */
#include "crypto/tls.h"
#include "crypto/pin_gnutls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include <quack/quack.h>

#include "crypto/token.h"

#define QK_TLS_TP_EXT       0x39 /* RFC 9001 §8.2 quic_transport_parameters */
#define QK_TLS_SECRET_QUEUE 16

/* RFC 9001 §4.2: TLS 1.3 only; §8.4: no middlebox compatibility mode. AES-CCM
 * is left out because the packet protection layer does not implement it. */
static const char default_priority[] = "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:"
                                       "+AES-256-GCM:+CHACHA20-POLY1305:+AES-128-CCM:"
                                       "%DISABLE_TLS13_COMPAT_MODE";

typedef struct tls_outbuf {
    uint8_t *buf;
    size_t off, len, cap;
} tls_outbuf;

typedef struct tls_secret_ev {
    uint8_t level, is_write, suite, len;
    uint8_t secret[QK_SECRET_MAX_BYTES];
} tls_secret_ev;

struct qk_tls {
    gnutls_session_t s;
    gnutls_certificate_credentials_t cred;
    int own_cred; /* cred is this session's (else the shared qk_tls_creds') */
    int is_server;
    uint8_t *local_tp;
    size_t local_tp_len;
    uint8_t peer_tp[QK_TLS_PEER_TP_MAX_BYTES];
    size_t peer_tp_len;
    int have_peer_tp;
    tls_outbuf out[QK_LEVEL_COUNT];
    tls_secret_ev q[QK_TLS_SECRET_QUEUE];
    size_t q_head, q_count;
    char alpn[256];
    int complete;
    int alert; /* last alert sent */
    int fatal; /* sticky error once the handshake failed */
    qk_tls_verify verify;
    uint8_t pin[QK_TLS_PIN_BYTES];
    void (*keylog)(void *ctx, const char *line);
    void *keylog_ctx;
    char err[QK_TLS_ERR_BYTES];
    /* For error texts (handshake failures that say what to fix). */
    char alpn_list[128];    /* ours, "h3, hq-interop" */
    char cipher_list[160];  /* ours, IANA names */
    char peer_ciphers[160]; /* server: what the ClientHello offered */
    char peer_alpn[128];    /* server: the ClientHello's ALPN list */
    /* resumption / 0-RTT */
    int offered_early; /* client: resumed with early data allowed */
    int early_secret;  /* an EARLY secret was installed */
    uint8_t *ticket;   /* client: session data of the last NewSessionTicket */
    size_t ticket_len;
    unsigned tickets_received;
};

/* ---- ticket keys and anti-replay (RFC 8446 §8, RFC 9001 §9.2) ---- */

typedef struct tk_seen {
    uint8_t h[32]; /* SHA-256 of GnuTLS's anti-replay key (the PSK binder) */
    time_t exp;
} tk_seen;

struct qk_ticket_keys {
    gnutls_datum_t key; /* master key; GnuTLS derives a new ticket key each period */
    gnutls_anti_replay_t ar;
    unsigned lifetime_s;
    pthread_mutex_t lock; /* endpoints of several threads may share one */
    tk_seen *seen;        /* single-use store: every 0-RTT ClientHello accepted once */
    size_t cap;
};

/* GnuTLS asks to remember a ClientHello that carries early data; an entry
 * already present is a replay (RFC 8446 §8.1). When the store is full of live
 * entries the early data is refused (never accepted twice). */
static int tk_add(void *ptr, time_t exp, const gnutls_datum_t *key, const gnutls_datum_t *data)
{
    (void)data;
    qk_ticket_keys *k = ptr;
    uint8_t h[32];
    if (gnutls_hash_fast(GNUTLS_DIG_SHA256, key->data, key->size, h) < 0)
        return GNUTLS_E_INTERNAL_ERROR;
    time_t now = time(NULL);
    int rc = GNUTLS_E_DB_ERROR;
    pthread_mutex_lock(&k->lock);
    size_t free_slot = k->cap;
    for (size_t i = 0; i < k->cap; i++) {
        if (k->seen[i].exp > now && !memcmp(k->seen[i].h, h, sizeof h)) {
            rc = GNUTLS_E_DB_ENTRY_EXISTS;
            free_slot = k->cap;
            break;
        }
        if (k->seen[i].exp <= now && free_slot == k->cap) free_slot = i;
    }
    if (free_slot < k->cap) {
        memcpy(k->seen[free_slot].h, h, sizeof h);
        k->seen[free_slot].exp = exp > now ? exp : now + 1;
        rc = 0;
    }
    pthread_mutex_unlock(&k->lock);
    return rc;
}

/* The 64-byte GnuTLS master key from a fleet secret: HKDF-SHA256
 * (RFC 5869) extract with salt "quack fleet v1", expand with the label. */
static int master_from_secret(const uint8_t *secret, size_t secret_len, gnutls_datum_t *out)
{
    static const char salt[] = "quack fleet v1", label[] = "quack session-ticket master";
    uint8_t prk[32];
    gnutls_datum_t ikm = {(unsigned char *)(uintptr_t)secret, (unsigned)secret_len};
    gnutls_datum_t sd = {(unsigned char *)(uintptr_t)salt, sizeof salt - 1};
    gnutls_datum_t info = {(unsigned char *)(uintptr_t)label, sizeof label - 1};
    gnutls_datum_t key = {prk, sizeof prk};
    out->size = 64; /* what gnutls_session_ticket_key_generate makes */
    out->data = gnutls_malloc(out->size);
    if (!out->data) return QK_ERR_NOMEM;
    int rc = gnutls_hkdf_extract(GNUTLS_MAC_SHA256, &ikm, &sd, prk) < 0 ||
                     gnutls_hkdf_expand(GNUTLS_MAC_SHA256, &key, &info, out->data, out->size) < 0
                 ? QK_ERR_TLS
                 : 0;
    gnutls_memset(prk, 0, sizeof prk);
    return rc;
}

static qk_ticket_keys *ticket_keys_new(const uint8_t *secret, size_t secret_len,
                                       qk_time rotation_ns, size_t max_entries, int *err)
{
    qk_ticket_keys *k = calloc(1, sizeof *k);
    int e = QK_ERR_NOMEM;
    if (!k) goto fail;
    if (pthread_mutex_init(&k->lock, NULL)) {
        free(k);
        k = NULL;
        goto fail;
    }
    k->cap = max_entries ? max_entries : 4096;
    k->seen = calloc(k->cap, sizeof *k->seen);
    if (!k->seen) goto fail;
    uint64_t s = rotation_ns ? rotation_ns / QK_NS_PER_S : 6 * 3600;
    k->lifetime_s = s ? (s > 7 * 24 * 3600 ? 7 * 24 * 3600 : (unsigned)s) : 1; /* RFC 8446 §4.6.1 */
    e = QK_ERR_TLS;
    if (secret) {
        if ((e = master_from_secret(secret, secret_len, &k->key))) goto fail;
        e = QK_ERR_TLS;
    } else if (gnutls_session_ticket_key_generate(&k->key) < 0) {
        goto fail;
    }
    if (gnutls_anti_replay_init(&k->ar) < 0) goto fail;
    gnutls_anti_replay_set_add_function(k->ar, tk_add);
    gnutls_anti_replay_set_ptr(k->ar, k);
    if (err) *err = 0;
    return k;
fail:
    qk_ticket_keys_del(k);
    if (err) *err = e;
    return NULL;
}

qk_ticket_keys *qk_ticket_keys_new(qk_time rotation_ns, size_t max_entries, int *err)
{
    return ticket_keys_new(NULL, 0, rotation_ns, max_entries, err);
}

qk_ticket_keys *qk_ticket_keys_new_from_secret(const uint8_t *secret, size_t secret_len,
                                               qk_time rotation_ns, size_t max_entries, int *err)
{
    if (!secret || secret_len < QK_FLEET_SECRET_MIN_BYTES) {
        if (err) *err = QK_ERR_INVALID_ARG;
        return NULL;
    }
    return ticket_keys_new(secret, secret_len, rotation_ns, max_entries, err);
}

void qk_ticket_keys_del(qk_ticket_keys *k)
{
    if (!k) return;
    if (k->ar) gnutls_anti_replay_deinit(k->ar);
    if (k->key.data) {
        gnutls_memset(k->key.data, 0, k->key.size);
        gnutls_free(k->key.data);
    }
    free(k->seen);
    pthread_mutex_destroy(&k->lock);
    free(k);
}

/* TLS 1.3 cipher suites QUIC may use (RFC 9001 §5.3), by IANA name. */
static const struct {
    const char *iana, *gnutls;
} suites[] = {
    {"TLS_AES_128_GCM_SHA256", "AES-128-GCM"},
    {"TLS_AES_256_GCM_SHA384", "AES-256-GCM"},
    {"TLS_CHACHA20_POLY1305_SHA256", "CHACHA20-POLY1305"},
    {"TLS_AES_128_CCM_SHA256", "AES-128-CCM"},
};

int qk_tls_priority_for_ciphers(const char *ciphers, char *out, size_t cap, const char **bad)
{
    size_t n = (size_t)snprintf(out, cap, "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL");
    const char *p = ciphers;
    *bad = NULL;
    while (p && *p) {
        size_t len = strcspn(p, ":");
        size_t i = 0;
        while (i < sizeof suites / sizeof *suites &&
               (strlen(suites[i].iana) != len || strncmp(suites[i].iana, p, len)))
            i++;
        if (i == sizeof suites / sizeof *suites) {
            *bad = p; /* unknown, or TLS_AES_128_CCM_8_SHA256 (RFC 9001 §5.3: not used) */
            return QK_ERR_CONFIG;
        }
        n += (size_t)snprintf(out + (n < cap ? n : cap), n < cap ? cap - n : 0, ":+%s",
                              suites[i].gnutls);
        p += len + (p[len] == ':');
    }
    if (p == ciphers || !ciphers) return QK_ERR_CONFIG;
    n += (size_t)snprintf(out + (n < cap ? n : cap), n < cap ? cap - n : 0,
                          ":%%DISABLE_TLS13_COMPAT_MODE");
    return n < cap ? 0 : QK_ERR_CONFIG;
}

static qk_crypto_suite suite_from_gnutls(gnutls_cipher_algorithm_t c)
{
    switch (c) {
    case GNUTLS_CIPHER_AES_128_GCM: return QK_SUITE_AES_128_GCM;
    case GNUTLS_CIPHER_AES_256_GCM: return QK_SUITE_AES_256_GCM;
    case GNUTLS_CIPHER_CHACHA20_POLY1305: return QK_SUITE_CHACHA20_POLY1305;
    case GNUTLS_CIPHER_AES_128_CCM: return QK_SUITE_AES_128_CCM;
    default: return QK_SUITE_UNKNOWN; /* CCM_8 included: RFC 9001 §5.3 */
    }
}

/* An error text, cut at the buffer's end (texts naming lists may be long). */
__attribute__((format(printf, 2, 3))) static void err_text(qk_tls *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->err, sizeof t->err, fmt, ap);
    va_end(ap);
}

static void set_err(qk_tls *t, const char *what, int rv)
{
    snprintf(t->err, sizeof t->err, "%s: %s", what, gnutls_strerror(rv));
}

/* ---- GnuTLS hooks ---- */

static int on_secret(gnutls_session_t s, gnutls_record_encryption_level_t level,
                     const void *secret_read, const void *secret_write, size_t size)
{
    qk_tls *t = gnutls_session_get_ptr(s);
    qk_crypto_suite suite = suite_from_gnutls(
        level == GNUTLS_ENCRYPTION_LEVEL_EARLY ? gnutls_early_cipher_get(s) : gnutls_cipher_get(s));
    if (suite == QK_SUITE_UNKNOWN || size > QK_SECRET_MAX_BYTES || (int)level >= QK_LEVEL_COUNT)
        return -1;
    if (level == GNUTLS_ENCRYPTION_LEVEL_EARLY) t->early_secret = 1;
    const void *sec[2] = {secret_read, secret_write};
    for (int w = 0; w < 2; w++) {
        if (!sec[w]) continue;
        if (t->q_count == QK_TLS_SECRET_QUEUE) return -1; /* the connection stopped polling */
        tls_secret_ev *e = &t->q[(t->q_head + t->q_count) % QK_TLS_SECRET_QUEUE];
        e->level = (uint8_t)level;
        e->is_write = (uint8_t)w;
        e->suite = (uint8_t)suite;
        e->len = (uint8_t)size;
        memcpy(e->secret, sec[w], size);
        t->q_count++;
    }
    return 0;
}

static int on_handshake_out(gnutls_session_t s, gnutls_record_encryption_level_t level,
                            gnutls_handshake_description_t htype, const void *data, size_t len)
{
    qk_tls *t = gnutls_session_get_ptr(s);
    if (htype == GNUTLS_HANDSHAKE_CHANGE_CIPHER_SPEC) return 0; /* RFC 9001 §8.4 */
    if ((int)level >= QK_LEVEL_COUNT) return -1;
    tls_outbuf *o = &t->out[level];
    if (o->off > 0) { /* compact what was already consumed */
        memmove(o->buf, o->buf + o->off, o->len - o->off);
        o->len -= o->off;
        o->off = 0;
    }
    if (o->len + len > QK_TLS_OUT_MAX_BYTES) return -1;
    if (o->len + len > o->cap) {
        size_t cap = o->cap ? o->cap : 4096;
        while (cap < o->len + len) cap *= 2;
        if (cap > QK_TLS_OUT_MAX_BYTES) cap = QK_TLS_OUT_MAX_BYTES;
        uint8_t *nb = realloc(o->buf, cap);
        if (!nb) return -1;
        o->buf = nb;
        o->cap = cap;
    }
    memcpy(o->buf + o->len, data, len);
    o->len += len;
    return 0;
}

static int on_alert(gnutls_session_t s, gnutls_record_encryption_level_t level,
                    gnutls_alert_level_t alert_level, gnutls_alert_description_t desc)
{
    qk_tls *t = gnutls_session_get_ptr(s);
    t->alert = (int)desc;
    return 0;
}

/* Client: keep the session data of each NewSessionTicket (RFC 8446 §4.6.1). */
static int on_hs_msg(gnutls_session_t s, unsigned htype, unsigned when, unsigned incoming,
                     const gnutls_datum_t *msg)
{
    (void)when;
    (void)msg;
    qk_tls *t = gnutls_session_get_ptr(s);
    if (htype != GNUTLS_HANDSHAKE_NEW_SESSION_TICKET || !incoming || t->is_server) return 0;
    gnutls_datum_t d;
    if (gnutls_session_get_data2(s, &d) < 0) return 0;
    uint8_t *nb = malloc(d.size ? d.size : 1);
    if (nb) {
        memcpy(nb, d.data, d.size);
        free(t->ticket);
        t->ticket = nb;
        t->ticket_len = d.size;
        t->tickets_received++;
    }
    gnutls_free(d.data);
    return 0;
}

static int tp_recv(gnutls_session_t s, const unsigned char *data, size_t len)
{
    qk_tls *t = gnutls_session_get_ptr(s);
    if (len > sizeof t->peer_tp) return GNUTLS_E_RECEIVED_ILLEGAL_EXTENSION;
    memcpy(t->peer_tp, data, len);
    t->peer_tp_len = len;
    t->have_peer_tp = 1;
    return 0;
}

static int tp_send(gnutls_session_t s, gnutls_buffer_t extdata)
{
    qk_tls *t = gnutls_session_get_ptr(s);
    int rv = gnutls_buffer_append_data(extdata, t->local_tp, t->local_tp_len);
    return rv < 0 ? rv : (int)t->local_tp_len;
}

static int verify_pin(gnutls_session_t s)
{
    qk_tls *t = gnutls_session_get_ptr(s);
    if (qk_gnutls_peer_pin_ok(s, t->pin)) return 0;
    char want[65], got[65] = "none";
    uint8_t spki[QK_PIN_BYTES];
    qk_pin_to_hex(t->pin, want);
    if (qk_gnutls_peer_spki(s, spki)) qk_pin_to_hex(spki, got);
    err_text(t, "certificate pin mismatch: expected SPKI SHA-256 %s, server presented %s", want,
             got);
    return -1;
}

/* IANA name of a TLS 1.3 cipher suite (RFC 8446 §B.4, RFC 9001 §5.3). */
static const char *suite_name(unsigned id)
{
    static const char *const names[] = {"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384",
                                        "TLS_CHACHA20_POLY1305_SHA256", "TLS_AES_128_CCM_SHA256",
                                        "TLS_AES_128_CCM_8_SHA256"};
    return id >= 0x1301 && id <= 0x1305 ? names[id - 0x1301] : NULL;
}

static void list_add(char *list, size_t cap, const char *item, size_t len)
{
    size_t n = strlen(list);
    if (n + len + 3 >= cap) return;
    snprintf(list + n, cap - n, "%s%.*s", n ? ", " : "", (int)len, item);
}

/* Server: a ClientHello's cipher suites and ALPN list (RFC 8446 §4.1.2,
 * RFC 7301 §3.1), kept for the error text when nothing matches. */
static void parse_client_hello(qk_tls *t, const uint8_t *p, size_t len)
{
    size_t o = 34; /* legacy_version, random */
    if (o >= len || (o += 1 + p[o]) + 2 > len) return;
    size_t cs = (size_t)p[o] << 8 | p[o + 1];
    o += 2;
    for (size_t i = 0; i + 1 < cs && o + i + 1 < len; i += 2) {
        const char *nm = suite_name((unsigned)p[o + i] << 8 | p[o + i + 1]);
        if (nm) list_add(t->peer_ciphers, sizeof t->peer_ciphers, nm, strlen(nm));
    }
    o += cs;
    if (o >= len || (o += 1 + p[o]) + 2 > len) return; /* legacy_compression_methods */
    size_t end = o + 2 + ((size_t)p[o] << 8 | p[o + 1]);
    for (o += 2; o + 4 <= len && o + 4 <= end;) {
        unsigned type = (unsigned)p[o] << 8 | p[o + 1];
        size_t el = (size_t)p[o + 2] << 8 | p[o + 3];
        o += 4;
        if (o + el > len) return;
        for (size_t i = 2; type == 16 && i < el && i + 1 + p[o + i] <= el; i += 1 + p[o + i])
            list_add(t->peer_alpn, sizeof t->peer_alpn, (const char *)p + o + i + 1, p[o + i]);
        o += el;
    }
}

static int on_client_hello(gnutls_session_t s, unsigned htype, unsigned when, unsigned incoming,
                           const gnutls_datum_t *msg)
{
    (void)when;
    qk_tls *t = gnutls_session_get_ptr(s);
    if (htype == GNUTLS_HANDSHAKE_CLIENT_HELLO && incoming && msg && !t->peer_ciphers[0])
        parse_client_hello(t, msg->data, msg->size);
    return 0;
}

static int on_keylog(gnutls_session_t s, const char *label, const gnutls_datum_t *secret)
{
    qk_tls *t = gnutls_session_get_ptr(s);
    gnutls_datum_t cr, sr;
    if (!t->keylog) return 0;
    gnutls_session_get_random(s, &cr, &sr);
    /* NSS key log format: <label> <client_random hex> <secret hex> */
    char line[64 + 2 * 32 + 2 * 64 + 4];
    size_t n = (size_t)snprintf(line, sizeof line, "%s ", label);
    for (unsigned i = 0; i < cr.size && n + 3 < sizeof line; i++)
        n += (size_t)snprintf(line + n, sizeof line - n, "%02x", cr.data[i]);
    if (n + 2 < sizeof line) line[n++] = ' ';
    for (unsigned i = 0; i < secret->size && n + 3 < sizeof line; i++)
        n += (size_t)snprintf(line + n, sizeof line - n, "%02x", secret->data[i]);
    line[n < sizeof line ? n : sizeof line - 1] = 0;
    t->keylog(t->keylog_ctx, line);
    return 0;
}

static ssize_t pull_never(gnutls_transport_ptr_t p, void *buf, size_t len)
{
    /* All input arrives through gnutls_handshake_write(). */
    errno = EAGAIN;
    return -1;
}

static ssize_t push_never(gnutls_transport_ptr_t p, const void *buf, size_t len)
{
    errno = EIO;
    return -1;
}

/* ---- setup ---- */

static int is_ip_literal(const char *name)
{
    unsigned char addr[16];
    return inet_pton(AF_INET, name, addr) == 1 || inet_pton(AF_INET6, name, addr) == 1;
}

/* Server: the certificate chain and key of cfg into cred; 0 or a GnuTLS
 * error (its text in err). */
static int load_server_cert(gnutls_certificate_credentials_t cred, const qk_tls_config *cfg,
                            const char **what)
{
    *what = "loading certificate/key";
    if (cfg->cert_pem && cfg->key_pem) {
        gnutls_datum_t c = {(unsigned char *)cfg->cert_pem, (unsigned)strlen(cfg->cert_pem)};
        gnutls_datum_t k = {(unsigned char *)cfg->key_pem, (unsigned)strlen(cfg->key_pem)};
        return gnutls_certificate_set_x509_key_mem2(cred, &c, &k, GNUTLS_X509_FMT_PEM, NULL, 0);
    }
    if (cfg->cert_file && cfg->key_file)
        return gnutls_certificate_set_x509_key_file2(cred, cfg->cert_file, cfg->key_file,
                                                     GNUTLS_X509_FMT_PEM, NULL, 0);
    *what = NULL; /* neither given */
    return GNUTLS_E_INVALID_REQUEST;
}

struct qk_tls_creds {
    gnutls_certificate_credentials_t cred;
    gnutls_priority_t prio;
    char *prio_str; /* the priority string prio was parsed from */
};

qk_tls_creds *qk_tls_creds_new(const qk_tls_config *cfg, int *err)
{
    int e = QK_ERR_NOMEM;
    const char *what, *errpos = NULL;
    const char *prio = cfg && cfg->priority ? cfg->priority : default_priority;
    qk_tls_creds *k = cfg ? calloc(1, sizeof *k) : NULL;
    if (!k || gnutls_certificate_allocate_credentials(&k->cred) < 0) goto fail;
    e = QK_ERR_CONFIG;
    if (load_server_cert(k->cred, cfg, &what) < 0) goto fail;
    if (gnutls_priority_init(&k->prio, prio, &errpos) < 0) goto fail;
    e = QK_ERR_NOMEM;
    if (!(k->prio_str = strdup(prio))) goto fail;
    if (err) *err = 0;
    return k;
fail:
    qk_tls_creds_del(k);
    if (err) *err = cfg ? e : QK_ERR_INVALID_ARG;
    return NULL;
}

void qk_tls_creds_del(qk_tls_creds *k)
{
    if (!k) return;
    if (k->prio) gnutls_priority_deinit(k->prio);
    if (k->cred) gnutls_certificate_free_credentials(k->cred);
    free(k->prio_str);
    free(k);
}

static int setup_credentials(qk_tls *t, const qk_tls_config *cfg)
{
    int rv;
    if (t->is_server && cfg->creds) { /* loaded once for the endpoint */
        rv = gnutls_credentials_set(t->s, GNUTLS_CRD_CERTIFICATE, cfg->creds->cred);
        return rv < 0 ? QK_ERR_TLS : 0;
    }
    rv = gnutls_certificate_allocate_credentials(&t->cred);
    if (rv < 0) return QK_ERR_NOMEM;
    t->own_cred = 1;
    if (t->is_server) {
        const char *what;
        rv = load_server_cert(t->cred, cfg, &what);
        if (rv < 0 && !what) {
            snprintf(t->err, sizeof t->err, "server needs a certificate and key");
            return QK_ERR_CONFIG;
        }
        if (rv < 0) {
            set_err(t, what, rv);
            return QK_ERR_CONFIG;
        }
    } else {
        t->verify = cfg->verify;
        if (cfg->verify == QK_TLS_VERIFY_SYSTEM) {
            rv = gnutls_certificate_set_x509_system_trust(t->cred);
            if (rv < 0) {
                set_err(t, "loading system CAs", rv);
                return QK_ERR_CONFIG;
            }
            gnutls_session_set_verify_cert(t->s, cfg->server_name, 0);
        } else if (cfg->verify == QK_TLS_VERIFY_PIN) {
            memcpy(t->pin, cfg->pin_sha256, QK_TLS_PIN_BYTES);
            gnutls_session_set_verify_function(t->s, verify_pin);
        } else if (cfg->verify != QK_TLS_VERIFY_INSECURE) {
            return QK_ERR_CONFIG;
        }
        /* RFC 6066 §3: literal IPv4/IPv6 addresses are not permitted in SNI
         * (GnuTLS servers answer illegal_parameter). */
        if (cfg->server_name && !is_ip_literal(cfg->server_name) &&
            gnutls_server_name_set(t->s, GNUTLS_NAME_DNS, cfg->server_name,
                                   strlen(cfg->server_name)) < 0)
            return QK_ERR_CONFIG;
    }
    rv = gnutls_credentials_set(t->s, GNUTLS_CRD_CERTIFICATE, t->cred);
    return rv < 0 ? QK_ERR_TLS : 0;
}

static int setup_alpn(qk_tls *t, const qk_tls_config *cfg)
{
    gnutls_datum_t d[QK_TLS_ALPN_MAX];
    size_t n = 0;
    for (; n < QK_TLS_ALPN_MAX && (cfg->alpn_count ? n < cfg->alpn_count : cfg->alpn[n] != NULL);
         n++) {
        size_t l = cfg->alpn[n] ? strlen(cfg->alpn[n]) : 0;
        if (l == 0 || l > 255) return QK_ERR_CONFIG;
        d[n].data = (unsigned char *)cfg->alpn[n];
        d[n].size = (unsigned)l;
        list_add(t->alpn_list, sizeof t->alpn_list, cfg->alpn[n], l);
    }
    /* RFC 9001 §8.1: ALPN is mandatory for QUIC. */
    if (n == 0) {
        snprintf(t->err, sizeof t->err, "at least one ALPN protocol is required");
        return QK_ERR_CONFIG;
    }
    int rv = gnutls_alpn_set_protocols(t->s, d, (unsigned)n, GNUTLS_ALPN_MANDATORY);
    return rv < 0 ? QK_ERR_CONFIG : 0;
}

static int setup_keylog(qk_tls *t, const qk_tls_config *cfg)
{
    t->keylog = cfg->keylog;
    t->keylog_ctx = cfg->keylog_ctx;
    if (t->keylog) gnutls_session_set_keylog_function(t->s, on_keylog);
    return 0;
}

static int setup_resumption(qk_tls *t, const qk_tls_config *cfg)
{
    if (t->is_server) {
        qk_ticket_keys *k = cfg->tickets;
        if (!k) return 0;
        if (gnutls_session_ticket_enable_server(t->s, &k->key) < 0) return QK_ERR_TLS;
        /* GnuTLS derives the ticket key from the master key per period of the
         * ticket lifetime: rotation. */
        gnutls_db_set_cache_expiration(t->s, (int)k->lifetime_s);
        if (cfg->early_data) {
            gnutls_anti_replay_enable(t->s, k->ar); /* RFC 9001 §9.2 */
            /* RFC 9001 §4.6.1: max_early_data_size 0xffffffff in QUIC. */
            if (gnutls_record_set_max_early_data_size(t->s, 0xffffffffu) < 0) return QK_ERR_TLS;
        }
        return 0;
    }
    gnutls_handshake_set_hook_function(t->s, GNUTLS_HANDSHAKE_NEW_SESSION_TICKET, GNUTLS_HOOK_POST,
                                       on_hs_msg);
    if (cfg->session && cfg->session_len) {
        if (gnutls_session_set_data(t->s, cfg->session, cfg->session_len) < 0) {
            snprintf(t->err, sizeof t->err, "unusable session data");
            return QK_ERR_CONFIG;
        }
        t->offered_early = cfg->early_data;
    }
    return 0;
}

static int setup_session(qk_tls *t, const qk_tls_config *cfg)
{
    /* RFC 9001 §8.3: no EndOfEarlyData in QUIC. */
    unsigned flags = (t->is_server ? GNUTLS_SERVER : GNUTLS_CLIENT) | GNUTLS_NO_END_OF_EARLY_DATA;
    if (t->is_server && !cfg->tickets) flags |= GNUTLS_NO_TICKETS;
    if (cfg->early_data && (!t->is_server || cfg->tickets)) flags |= GNUTLS_ENABLE_EARLY_DATA;
    int rv = gnutls_init(&t->s, flags);
    if (rv < 0) return QK_ERR_NOMEM;
    gnutls_session_set_ptr(t->s, t);
    const char *errpos = NULL;
    const char *want = cfg->priority ? cfg->priority : default_priority;
    if (t->is_server && cfg->creds && !strcmp(cfg->creds->prio_str, want))
        rv = gnutls_priority_set(t->s, cfg->creds->prio); /* parsed once */
    else
        rv = gnutls_priority_set_direct(t->s, want, &errpos);
    if (rv < 0) {
        set_err(t, "priority string", rv);
        return QK_ERR_CONFIG;
    }
    /* Our TLS 1.3 suites, by IANA name, for error texts. */
    const char *prio = cfg->priority ? cfg->priority : default_priority;
    for (size_t i = 0; i < sizeof suites / sizeof *suites; i++) {
        char tok[40];
        size_t tl = (size_t)snprintf(tok, sizeof tok, ":+%s", suites[i].gnutls);
        const char *at = strstr(prio, tok);
        if (at && (at[tl] == ':' || at[tl] == 0))
            list_add(t->cipher_list, sizeof t->cipher_list, suites[i].iana, strlen(suites[i].iana));
    }
    if (t->is_server)
        gnutls_handshake_set_hook_function(t->s, GNUTLS_HANDSHAKE_CLIENT_HELLO, GNUTLS_HOOK_PRE,
                                           on_client_hello);
    gnutls_handshake_set_secret_function(t->s, on_secret);
    gnutls_handshake_set_read_function(t->s, on_handshake_out);
    gnutls_alert_set_read_function(t->s, on_alert);
    gnutls_transport_set_pull_function(t->s, pull_never);
    gnutls_transport_set_push_function(t->s, push_never);
    rv = gnutls_session_ext_register(
        t->s, "quic_transport_parameters", QK_TLS_TP_EXT, GNUTLS_EXT_TLS, tp_recv, tp_send, NULL,
        NULL, NULL, GNUTLS_EXT_FLAG_TLS | GNUTLS_EXT_FLAG_CLIENT_HELLO | GNUTLS_EXT_FLAG_EE);
    if (rv < 0) return QK_ERR_TLS;
    int err = setup_credentials(t, cfg);
    if (err == 0) err = setup_alpn(t, cfg);
    if (err == 0) err = setup_keylog(t, cfg);
    if (err == 0) err = setup_resumption(t, cfg);
    return err;
}

qk_tls *qk_tls_new(const qk_tls_config *cfg, int is_server, const uint8_t *local_tparams,
                   size_t tparams_len, int *err)
{
    int e = QK_ERR_INVALID_ARG;
    qk_tls *t = NULL;
    if (!cfg || (!local_tparams && tparams_len) || tparams_len > 0xffff) goto fail;
    e = QK_ERR_NOMEM;
    t = calloc(1, sizeof *t);
    if (!t) goto fail;
    t->is_server = is_server;
    if (tparams_len) {
        t->local_tp = malloc(tparams_len);
        if (!t->local_tp) goto fail;
        memcpy(t->local_tp, local_tparams, tparams_len);
        t->local_tp_len = tparams_len;
    }
    e = setup_session(t, cfg);
    if (e != 0) goto fail;
    if (err) *err = 0;
    return t;
fail:
    qk_tls_del(t);
    if (err) *err = e;
    return NULL;
}

void qk_tls_del(qk_tls *t)
{
    if (!t) return;
    if (t->s) gnutls_deinit(t->s);
    if (t->cred && t->own_cred) gnutls_certificate_free_credentials(t->cred);
    for (int i = 0; i < QK_LEVEL_COUNT; i++) free(t->out[i].buf);
    free(t->local_tp);
    free(t->ticket);
    qk_crypto_wipe(t->q, sizeof t->q);
    free(t);
}

/* ---- driving ---- */

/* What to fix, for the handshake failures a user can act on. */
static void explain(qk_tls *t, int rv)
{
    const char *peer = t->is_server ? "client" : "server";
    if (rv == GNUTLS_E_NO_CIPHER_SUITES || rv == GNUTLS_E_UNKNOWN_CIPHER_SUITE) {
        err_text(t, "no common TLS cipher suite: %s offers %s; %s accepts %s",
                 t->is_server ? "client" : "server", t->peer_ciphers[0] ? t->peer_ciphers : "?",
                 t->is_server ? "server" : "client", t->cipher_list);
    } else if (rv == GNUTLS_E_NO_APPLICATION_PROTOCOL) {
        err_text(t, "ALPN mismatch: %s offers %s; %s accepts %s", peer,
                 t->peer_alpn[0] ? t->peer_alpn : "none", t->is_server ? "server" : "client",
                 t->alpn_list);
    } else if (rv == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR && !t->is_server) {
        gnutls_datum_t why = {0};
        unsigned st = gnutls_session_get_verify_cert_status(t->s);
        char got[65] = "?";
        uint8_t spki[QK_PIN_BYTES];
        if (qk_gnutls_peer_spki(t->s, spki)) qk_pin_to_hex(spki, got);
        gnutls_certificate_verification_status_print(st, GNUTLS_CRT_X509, &why, 0);
        for (unsigned n = why.data ? why.size : 0;
             n && (why.data[n - 1] == ' ' || !why.data[n - 1]);)
            why.data[--n] = 0; /* GnuTLS ends the text with a space */
        err_text(t, "untrusted certificate (%s); server SPKI SHA-256 %s",
                 why.data ? (const char *)why.data : "verification failed", got);
        gnutls_free(why.data);
    }
}

static int fail_with(qk_tls *t, int rv)
{
    if (rv != 0 && t->err[0] == '\0') explain(t, rv);
    if (rv != 0 && t->err[0] == '\0') set_err(t, "handshake", rv);
    if (t->alert == 0) {
        gnutls_alert_send_appropriate(t->s, rv); /* reported through on_alert */
        if (t->alert == 0) {
            int lvl;
            int a = gnutls_error_to_alert(rv, &lvl);
            t->alert = a > 0 ? a : QK_TLS_ALERT_INTERNAL_ERROR;
        }
    }
    t->fatal = QK_ERR_CRYPTO_ALERT(t->alert);
    return t->fatal;
}

static int fail_alert(qk_tls *t, int alert, const char *why)
{
    snprintf(t->err, sizeof t->err, "%s", why);
    t->alert = alert;
    t->fatal = QK_ERR_CRYPTO_ALERT(alert);
    return t->fatal;
}

/* Post-handshake checks RFC 9001 requires of both sides. */
static int finish(qk_tls *t)
{
    gnutls_datum_t p;
    /* RFC 9001 §8.2: missing quic_transport_parameters -> missing_extension. */
    if (!t->have_peer_tp)
        return fail_alert(t, QK_TLS_ALERT_MISSING_EXTENSION, "peer sent no transport parameters");
    /* RFC 9001 §8.1: no ALPN agreed -> no_application_protocol. */
    if (gnutls_alpn_get_selected_protocol(t->s, &p) < 0 || p.size == 0 || p.size >= sizeof t->alpn)
        return fail_alert(t, QK_TLS_ALERT_NO_APPLICATION_PROTOCOL,
                          t->is_server ? "ALPN mismatch: no ALPN protocol agreed"
                                       : "ALPN mismatch: server selected none of ours");
    memcpy(t->alpn, p.data, p.size);
    t->alpn[p.size] = '\0';
    t->complete = 1;
    return 0;
}

int qk_tls_handshake(qk_tls *t)
{
    if (!t) return QK_ERR_INVALID_ARG;
    if (t->fatal) return t->fatal;
    if (t->complete) return 0;
    int rv = gnutls_handshake(t->s);
    if (rv == 0) return finish(t);
    if (!gnutls_error_is_fatal(rv)) return QK_ERR_AGAIN;
    return fail_with(t, rv);
}

int qk_tls_provide(qk_tls *t, qk_crypto_level level, const uint8_t *data, size_t len)
{
    if (!t || (unsigned)level >= QK_LEVEL_COUNT || (!data && len)) return QK_ERR_INVALID_ARG;
    if (t->fatal) return t->fatal;
    if (len == 0) return 0;
    int rv = gnutls_handshake_write(t->s, (gnutls_record_encryption_level_t)level, data, len);
    if (rv < 0 && gnutls_error_is_fatal(rv)) return fail_with(t, rv);
    return 0;
}

int qk_tls_out(qk_tls *t, qk_crypto_level level, const uint8_t **ptr, size_t *len)
{
    if (!t || (unsigned)level >= QK_LEVEL_COUNT || !ptr || !len) return QK_ERR_INVALID_ARG;
    tls_outbuf *o = &t->out[level];
    *ptr = o->buf ? o->buf + o->off : NULL;
    *len = o->len - o->off;
    return 0;
}

void qk_tls_consume(qk_tls *t, qk_crypto_level level, size_t n)
{
    if (!t || (unsigned)level >= QK_LEVEL_COUNT) return;
    tls_outbuf *o = &t->out[level];
    if (n > o->len - o->off) n = o->len - o->off;
    o->off += n;
    if (o->off == o->len) { /* drained: the handshake rarely writes again */
        free(o->buf);
        o->buf = NULL;
        o->off = o->len = o->cap = 0;
    }
}

int qk_tls_poll_secret(qk_tls *t, qk_crypto_level *level, int *is_write, qk_crypto_suite *suite,
                       uint8_t *secret, size_t *len)
{
    if (!t || t->q_count == 0) return QK_ERR_AGAIN;
    tls_secret_ev *e = &t->q[t->q_head];
    if (level) *level = (qk_crypto_level)e->level;
    if (is_write) *is_write = e->is_write;
    if (suite) *suite = (qk_crypto_suite)e->suite;
    if (secret) memcpy(secret, e->secret, e->len);
    if (len) *len = e->len;
    qk_crypto_wipe(e, sizeof *e);
    t->q_head = (t->q_head + 1) % QK_TLS_SECRET_QUEUE;
    t->q_count--;
    return 0;
}

const uint8_t *qk_tls_peer_tparams(const qk_tls *t, size_t *len)
{
    if (!t || !t->have_peer_tp) {
        if (len) *len = 0;
        return NULL;
    }
    if (len) *len = t->peer_tp_len;
    return t->peer_tp;
}

const char *qk_tls_alpn(const qk_tls *t)
{
    return t && t->alpn[0] ? t->alpn : NULL;
}

int qk_tls_export(const qk_tls *t, const char *label, const uint8_t *context, size_t context_len,
                  uint8_t *out, size_t out_len)
{
    if (!t || !label || !out || !out_len || (context_len && !context)) return QK_ERR_INVALID_ARG;
    if (!t->complete) return QK_ERR_STATE;
    /* RFC 8446 §7.5: TLS-Exporter(label, context, length) from exporter_master_secret */
    int rc = gnutls_prf_rfc5705(t->s, strlen(label), label, context_len, (const char *)context,
                                out_len, (char *)out);
    return rc < 0 ? QK_ERR_TLS : 0;
}

int qk_tls_complete(const qk_tls *t)
{
    return t ? t->complete : 0;
}

int qk_tls_alert(const qk_tls *t)
{
    return t ? t->alert : 0;
}

qk_crypto_suite qk_tls_cipher_suite(const qk_tls *t)
{
    return t ? suite_from_gnutls(gnutls_cipher_get(t->s)) : QK_SUITE_UNKNOWN;
}

const char *qk_tls_last_error(const qk_tls *t)
{
    return t && t->err[0] ? t->err : "no error";
}

int qk_tls_peer_spki_sha256(const qk_tls *t, uint8_t out[QK_TLS_PIN_BYTES])
{
    if (!t || !out) return QK_ERR_INVALID_ARG;
    return qk_gnutls_peer_spki(t->s, out) ? 0 : QK_ERR_STATE;
}

void qk_tls_explain_peer_alert(const qk_tls *t, int alert, const char *peer_reason, char *out,
                               size_t cap)
{
    /* Another stack's close may carry no reason: say what the alert means. */
    const char *peer = t && t->is_server ? "client" : "server";
    const char *us = t && t->is_server ? "server" : "client";
    if (!t || (peer_reason && peer_reason[0])) {
        snprintf(out, cap, "%s", peer_reason ? peer_reason : "");
    } else if (alert == QK_TLS_ALERT_HANDSHAKE_FAILURE) {
        snprintf(out, cap,
                 "TLS handshake_failure from the %s (no common TLS cipher suite?): %s offers %s",
                 peer, us, t->cipher_list);
    } else if (alert == QK_TLS_ALERT_NO_APPLICATION_PROTOCOL) {
        snprintf(out, cap, "ALPN mismatch: %s offers %s; the %s accepts none of them", us,
                 t->alpn_list, peer);
    } else {
        snprintf(out, cap, "TLS alert %d from the %s", alert, peer);
    }
}

const uint8_t *qk_tls_ticket(const qk_tls *t, size_t *len)
{
    if (len) *len = t && t->ticket ? t->ticket_len : 0;
    return t ? t->ticket : NULL;
}

unsigned qk_tls_ticket_count(const qk_tls *t)
{
    return t ? t->tickets_received : 0;
}

int qk_tls_resumed(const qk_tls *t)
{
    return t && t->complete && gnutls_session_is_resumed(t->s) ? 1 : 0;
}

int qk_tls_early_status(const qk_tls *t)
{
    if (!t || !t->complete) return QK_TLS_EARLY_NONE;
    int accepted = (gnutls_session_get_flags(t->s) & GNUTLS_SFLAGS_EARLY_DATA) != 0;
    if (t->is_server)
        return accepted && t->early_secret ? QK_TLS_EARLY_ACCEPTED : QK_TLS_EARLY_NONE;
    if (!t->early_secret) return QK_TLS_EARLY_NONE;
    return accepted ? QK_TLS_EARLY_ACCEPTED : QK_TLS_EARLY_REJECTED;
}
