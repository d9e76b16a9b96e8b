/* SPDX-License-Identifier: MIT */
/* covers: src/crypto/tls_gnutls.c src/crypto/cert_gnutls.c */
/* In-memory TLS 1.3 handshakes between two qk_tls contexts, moved per level. */
#include "qk_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <openssl/x509.h>

#include <quack/common.h>

#include "crypto/packet.h"
#include "crypto/tls.h"

static char *g_cert, *g_key;

typedef struct side {
    qk_tls *tls;
    int rc;
    /* secrets seen: [level][is_write] */
    uint8_t secret[QK_LEVEL_COUNT][2][QK_SECRET_MAX_BYTES];
    size_t secret_len[QK_LEVEL_COUNT][2];
    qk_crypto_suite suite[QK_LEVEL_COUNT][2];
} side;

static int setup_cert(void **state)
{
    /* 2026-01-01, 30 days; the tests only need a well-formed cert. */
    return qk_cert_generate("quack.test", 1767225600, 30, &g_cert, &g_key);
}

static int teardown_cert(void **state)
{
    free(g_cert);
    free(g_key);
    return 0;
}

static void drain_secrets(side *s)
{
    qk_crypto_level lv;
    int w;
    qk_crypto_suite su;
    uint8_t sec[QK_SECRET_MAX_BYTES];
    size_t len;
    while (qk_tls_poll_secret(s->tls, &lv, &w, &su, sec, &len) == 0) {
        assert_true(lv < QK_LEVEL_COUNT);
        memcpy(s->secret[lv][w], sec, len);
        s->secret_len[lv][w] = len;
        s->suite[lv][w] = su;
    }
}

/* Move pending output of `from` into `to`, level by level. */
static void move_bytes(side *from, side *to)
{
    for (int lv = 0; lv < QK_LEVEL_COUNT; lv++) {
        const uint8_t *p;
        size_t n;
        assert_int_equal(qk_tls_out(from->tls, (qk_crypto_level)lv, &p, &n), 0);
        if (n == 0) continue;
        /* Feed in two pieces to exercise partial messages. */
        size_t half = n / 2;
        int rc = qk_tls_provide(to->tls, (qk_crypto_level)lv, p, half);
        if (rc == 0) rc = qk_tls_provide(to->tls, (qk_crypto_level)lv, p + half, n - half);
        qk_tls_consume(from->tls, (qk_crypto_level)lv, n);
        if (rc < 0) to->rc = rc;
    }
}

/* Run the handshake to completion or failure (bounded rounds). */
static void run(side *c, side *s)
{
    c->rc = s->rc = QK_ERR_AGAIN;
    for (int round = 0; round < 20; round++) {
        if (c->rc == QK_ERR_AGAIN) c->rc = qk_tls_handshake(c->tls);
        drain_secrets(c);
        move_bytes(c, s);
        if (s->rc == QK_ERR_AGAIN) s->rc = qk_tls_handshake(s->tls);
        drain_secrets(s);
        move_bytes(s, c);
        if (c->rc != QK_ERR_AGAIN && s->rc != QK_ERR_AGAIN) return;
        if (c->rc < 0 && c->rc != QK_ERR_AGAIN) return;
        if (s->rc < 0 && s->rc != QK_ERR_AGAIN) return;
    }
}

static qk_tls *make(int server, const char *alpn0, const char *alpn1, qk_tls_verify v,
                    const uint8_t *pin, const char *tp, const char *priority)
{
    qk_tls_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.alpn[0] = alpn0;
    cfg.alpn[1] = alpn1;
    cfg.priority = priority;
    if (server) {
        cfg.cert_pem = g_cert;
        cfg.key_pem = g_key;
    } else {
        cfg.server_name = "quack.test";
        cfg.verify = v;
        if (pin) memcpy(cfg.pin_sha256, pin, QK_TLS_PIN_BYTES);
    }
    int err = 1;
    qk_tls *t = qk_tls_new(&cfg, server, (const uint8_t *)tp, strlen(tp), &err);
    assert_non_null(t);
    assert_int_equal(err, 0);
    return t;
}

/* SHA-256 of the SPKI computed with OpenSSL, independently of GnuTLS. */
static void openssl_pin(const char *pem, uint8_t out[32])
{
    BIO *b = BIO_new_mem_buf(pem, -1);
    X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
    assert_non_null(x);
    unsigned char *der = NULL;
    int n = i2d_PUBKEY(X509_get0_pubkey(x), &der);
    assert_true(n > 0);
    SHA256(der, (size_t)n, out);
    OPENSSL_free(der);
    X509_free(x);
    BIO_free(b);
}

static void check_success(side *c, side *s, qk_crypto_suite want_suite)
{
    assert_int_equal(c->rc, 0);
    assert_int_equal(s->rc, 0);
    assert_true(qk_tls_complete(c->tls));
    assert_true(qk_tls_complete(s->tls));
    assert_string_equal(qk_tls_alpn(c->tls), "hq-interop");
    assert_string_equal(qk_tls_alpn(s->tls), "hq-interop");
    size_t n;
    const uint8_t *tp = qk_tls_peer_tparams(c->tls, &n);
    assert_int_equal(n, 9);
    assert_memory_equal(tp, "server-tp", 9);
    tp = qk_tls_peer_tparams(s->tls, &n);
    assert_int_equal(n, 9);
    assert_memory_equal(tp, "client-tp", 9);
    assert_int_equal(qk_tls_cipher_suite(c->tls), want_suite);
    assert_int_equal(qk_tls_cipher_suite(s->tls), want_suite);
    /* Both sides installed matching secrets: one side's write = other's read. */
    for (int lv = QK_LEVEL_HANDSHAKE; lv <= QK_LEVEL_APPLICATION; lv++) {
        for (int w = 0; w < 2; w++) {
            size_t len = c->secret_len[lv][w];
            assert_int_equal(len, qk_suite_secret_len(want_suite));
            assert_int_equal(s->secret_len[lv][!w], len);
            assert_memory_equal(c->secret[lv][w], s->secret[lv][!w], len);
            assert_int_equal(c->suite[lv][w], want_suite);
        }
        /* Read and write secrets differ. */
        assert_memory_not_equal(c->secret[lv][0], c->secret[lv][1], c->secret_len[lv][0]);
    }
    /* No 0-RTT, no stray output. */
    assert_int_equal(c->secret_len[QK_LEVEL_EARLY][0] + c->secret_len[QK_LEVEL_EARLY][1], 0);
    /* The 1-RTT keys interoperate: client seals, server opens. */
    qk_pkt_keys ck, sk;
    uint8_t hdr[4] = {0x40, 1, 2, 3}, pkt[64] = "hello over 1-RTT";
    size_t lv = QK_LEVEL_APPLICATION, sl = c->secret_len[lv][1];
    assert_int_equal(qk_pkt_keys_init(&ck, want_suite, c->secret[lv][1], sl), 0);
    assert_int_equal(qk_pkt_keys_init(&sk, want_suite, s->secret[lv][0], sl), 0);
    assert_int_equal(qk_pkt_seal(&ck, 7, hdr, 4, pkt, 16), 32);
    assert_int_equal(qk_pkt_open(&sk, 7, hdr, 4, pkt, 32), 16);
    assert_memory_equal(pkt, "hello over 1-RTT", 16);
    qk_pkt_keys_free(&ck);
    qk_pkt_keys_free(&sk);
}

static void test_handshake_pin(void **state)
{
    uint8_t pin[32], ref[32];
    assert_int_equal(qk_cert_pin_pem(g_cert, strlen(g_cert), pin), 0);
    openssl_pin(g_cert, ref);
    assert_memory_equal(pin, ref, 32);
    side c = {0}, s = {0};
    c.tls = make(0, "hq-interop", NULL, QK_TLS_VERIFY_PIN, pin, "client-tp", NULL);
    s.tls = make(1, "h3", "hq-interop", 0, NULL, "server-tp", NULL);
    run(&c, &s);
    check_success(&c, &s, QK_SUITE_AES_128_GCM);
    /* Later calls keep reporting completion. */
    assert_int_equal(qk_tls_handshake(c.tls), 0);
    qk_tls_del(c.tls);
    qk_tls_del(s.tls);
}

static void test_handshake_suites(void **state)
{
    static const struct {
        const char *prio;
        qk_crypto_suite suite;
    } cases[] = {
        {"NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-256-GCM:%DISABLE_TLS13_COMPAT_MODE",
         QK_SUITE_AES_256_GCM},
        {"NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+CHACHA20-POLY1305:%DISABLE_TLS13_COMPAT_MODE",
         QK_SUITE_CHACHA20_POLY1305},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        side c = {0}, s = {0};
        c.tls =
            make(0, "hq-interop", NULL, QK_TLS_VERIFY_INSECURE, NULL, "client-tp", cases[i].prio);
        s.tls = make(1, "hq-interop", NULL, 0, NULL, "server-tp", NULL);
        run(&c, &s);
        check_success(&c, &s, cases[i].suite);
        qk_tls_del(c.tls);
        qk_tls_del(s.tls);
    }
}

static void test_wrong_pin(void **state)
{
    uint8_t pin[32];
    assert_int_equal(qk_cert_pin_pem(g_cert, strlen(g_cert), pin), 0);
    pin[5] ^= 1;
    side c = {0}, s = {0};
    c.tls = make(0, "hq-interop", NULL, QK_TLS_VERIFY_PIN, pin, "client-tp", NULL);
    s.tls = make(1, "hq-interop", NULL, 0, NULL, "server-tp", NULL);
    run(&c, &s);
    /* GnuTLS maps a rejected certificate to bad_certificate (42). */
    assert_int_equal(c.rc, QK_ERR_CRYPTO_ALERT(QK_TLS_ALERT_BAD_CERTIFICATE));
    assert_int_equal(qk_err_transport_code(c.rc), 0x100 + 42);
    assert_int_equal(qk_tls_alert(c.tls), 42);
    assert_false(qk_tls_complete(c.tls));
    assert_false(qk_tls_complete(s.tls));
    /* No 1-RTT write secret was handed out on the failing client. */
    assert_int_equal(c.secret_len[QK_LEVEL_APPLICATION][1] == 0 || c.rc < 0, 1);
    /* The error names both keys; the presented one is readable. */
    uint8_t real[32], got[32];
    char want_hex[65], real_hex[65], text[300];
    assert_int_equal(qk_cert_pin_pem(g_cert, strlen(g_cert), real), 0);
    qk_pin_to_hex(pin, want_hex);
    qk_pin_to_hex(real, real_hex);
    snprintf(text, sizeof text,
             "certificate pin mismatch: expected SPKI SHA-256 %s, server presented %s", want_hex,
             real_hex);
    assert_string_equal(qk_tls_last_error(c.tls), text);
    assert_int_equal(qk_tls_peer_spki_sha256(c.tls, got), 0);
    assert_memory_equal(got, real, 32);
    assert_int_equal(qk_tls_peer_spki_sha256(s.tls, got), QK_ERR_STATE); /* no client cert */
    qk_tls_del(c.tls);
    qk_tls_del(s.tls);
}

/* No common cipher suite: the server's text lists both sides (the
 * ClientHello's offer and what it accepts); a client told only the alert
 * says what it offered. */
static void test_no_common_suite(void **state)
{
    side c = {0}, s = {0};
    c.tls = make(0, "hq-interop", NULL, QK_TLS_VERIFY_INSECURE, NULL, "client-tp",
                 "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-256-GCM:+AES-128-GCM:"
                 "%DISABLE_TLS13_COMPAT_MODE");
    s.tls = make(1, "hq-interop", NULL, 0, NULL, "server-tp",
                 "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+CHACHA20-POLY1305:"
                 "%DISABLE_TLS13_COMPAT_MODE");
    run(&c, &s);
    assert_int_equal(s.rc, QK_ERR_CRYPTO_ALERT(QK_TLS_ALERT_HANDSHAKE_FAILURE));
    assert_string_equal(qk_tls_last_error(s.tls),
                        "no common TLS cipher suite: client offers TLS_AES_256_GCM_SHA384, "
                        "TLS_AES_128_GCM_SHA256; server accepts TLS_CHACHA20_POLY1305_SHA256");
    char out[256];
    qk_tls_explain_peer_alert(c.tls, QK_TLS_ALERT_HANDSHAKE_FAILURE, "", out, sizeof out);
    assert_non_null(strstr(out, "no common TLS cipher suite?"));
    assert_non_null(strstr(out, "client offers TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384"));
    qk_tls_explain_peer_alert(c.tls, QK_TLS_ALERT_HANDSHAKE_FAILURE, "server text", out,
                              sizeof out);
    assert_string_equal(out, "server text");
    qk_tls_del(c.tls);
    qk_tls_del(s.tls);
}

static void test_alpn_mismatch(void **state)
{
    side c = {0}, s = {0};
    c.tls = make(0, "h3", NULL, QK_TLS_VERIFY_INSECURE, NULL, "client-tp", NULL);
    s.tls = make(1, "hq-interop", NULL, 0, NULL, "server-tp", NULL);
    run(&c, &s);
    assert_int_equal(s.rc, QK_ERR_CRYPTO_ALERT(QK_TLS_ALERT_NO_APPLICATION_PROTOCOL));
    assert_int_equal(qk_err_transport_code(s.rc), 0x178);
    assert_int_equal(qk_tls_alert(s.tls), 120);
    assert_false(qk_tls_complete(c.tls));
    assert_string_equal(qk_tls_last_error(s.tls),
                        "ALPN mismatch: client offers h3; server accepts hq-interop");
    char out[256];
    qk_tls_explain_peer_alert(c.tls, QK_TLS_ALERT_NO_APPLICATION_PROTOCOL, "", out, sizeof out);
    assert_string_equal(out, "ALPN mismatch: client offers h3; the server accepts none of them");
    qk_tls_del(c.tls);
    qk_tls_del(s.tls);
}

/* The key-log callback: append each line to a memstream. */
static void keylog_to(void *ctx, const char *line)
{
    fprintf(ctx, "%s\n", line);
}

static void test_keylog(void **state)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    qk_tls_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.alpn[0] = "hq-interop";
    cfg.verify = QK_TLS_VERIFY_INSECURE;
    cfg.keylog = keylog_to;
    cfg.keylog_ctx = f;
    side c = {0}, s = {0};
    c.tls = qk_tls_new(&cfg, 0, (const uint8_t *)"client-tp", 9, NULL);
    assert_non_null(c.tls);
    s.tls = make(1, "hq-interop", NULL, 0, NULL, "server-tp", NULL);
    run(&c, &s);
    assert_int_equal(c.rc, 0);
    fclose(f);
    assert_non_null(strstr(buf, "CLIENT_HANDSHAKE_TRAFFIC_SECRET "));
    assert_non_null(strstr(buf, "SERVER_TRAFFIC_SECRET_0 "));
    /* The logged client 1-RTT secret is the one the client installed. */
    char hexs[2 * QK_SECRET_MAX_BYTES + 1];
    for (size_t i = 0; i < c.secret_len[QK_LEVEL_APPLICATION][1]; i++)
        sprintf(hexs + 2 * i, "%02x", c.secret[QK_LEVEL_APPLICATION][1][i]);
    char *line = strstr(buf, "CLIENT_TRAFFIC_SECRET_0 ");
    assert_non_null(line);
    assert_non_null(strstr(line, hexs));
    free(buf);
    qk_tls_del(c.tls);
    qk_tls_del(s.tls);
}

/* The library reads no environment: without a keylog callback nothing is
 * logged even when $SSLKEYLOGFILE is set (the CLI's qk_io_log_files reads
 * it: tests/unit/test_io_logfile.c). */
static void test_keylog_env_ignored(void **state)
{
    char path[] = "/tmp/qk_keylog_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(setenv("SSLKEYLOGFILE", path, 1), 0);
    side c = {0}, s = {0};
    c.tls = make(0, "hq-interop", NULL, QK_TLS_VERIFY_INSECURE, NULL, "client-tp", NULL);
    s.tls = make(1, "hq-interop", NULL, 0, NULL, "server-tp", NULL);
    unsetenv("SSLKEYLOGFILE");
    run(&c, &s);
    assert_int_equal(c.rc, 0);
    qk_tls_del(c.tls);
    qk_tls_del(s.tls);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, 0);
    unlink(path);
}

static void test_config_errors(void **state)
{
    qk_tls_config cfg;
    int err = 0;
    memset(&cfg, 0, sizeof cfg);
    cfg.alpn[0] = "hq-interop";
    /* server without certificate */
    assert_null(qk_tls_new(&cfg, 1, NULL, 0, &err));
    assert_int_equal(err, QK_ERR_CONFIG);
    /* no ALPN */
    cfg.alpn[0] = NULL;
    cfg.verify = QK_TLS_VERIFY_INSECURE;
    assert_null(qk_tls_new(&cfg, 0, NULL, 0, &err));
    assert_int_equal(err, QK_ERR_CONFIG);
    /* garbage PEM */
    cfg.alpn[0] = "x";
    cfg.cert_pem = "not a cert";
    cfg.key_pem = "not a key";
    assert_null(qk_tls_new(&cfg, 1, NULL, 0, &err));
    assert_int_equal(err, QK_ERR_CONFIG);
}

static void test_pin_printers(void **state)
{
    uint8_t pin[32], back[32];
    char hx[65], b64[45];
    for (int i = 0; i < 32; i++) pin[i] = (uint8_t)(i * 37 + 1);
    qk_pin_to_hex(pin, hx);
    assert_string_equal(hx, "01264b7095badf04294e7398bde2072c51769bc0e50a2f54799ec3e80d32577c");
    qk_pin_to_base64(pin, b64);
    /* Reference: OpenSSL's base64 encoder. */
    unsigned char ref[64];
    int n = EVP_EncodeBlock(ref, pin, 32);
    assert_int_equal(n, 44);
    assert_string_equal(b64, (char *)ref);
    assert_int_equal(qk_pin_parse(hx, back), 0);
    assert_memory_equal(back, pin, 32);
    memset(back, 0, 32);
    char pref[64];
    snprintf(pref, sizeof pref, "sha256/%s", b64);
    assert_int_equal(qk_pin_parse(pref, back), 0);
    assert_memory_equal(back, pin, 32);
    assert_int_equal(qk_pin_parse("abc", back), QK_ERR_INVALID_ARG);
    hx[10] = 'g';
    assert_int_equal(qk_pin_parse(hx, back), QK_ERR_INVALID_ARG);
}

static void test_cert_files(void **state)
{
    char dir[] = "/tmp/qk_cert_XXXXXX", cp[128], kp[128];
    assert_non_null(mkdtemp(dir));
    snprintf(cp, sizeof cp, "%s/cert.pem", dir);
    snprintf(kp, sizeof kp, "%s/key.pem", dir);
    assert_int_equal(qk_cert_generate_files("example.org", 1767225600, 1, cp, kp), 0);
    uint8_t pin[32];
    assert_int_equal(qk_cert_pin_file(cp, pin), 0);
    assert_int_equal(qk_cert_pin_file(kp, pin), QK_ERR_CONFIG);
    assert_int_equal(qk_cert_pin_file("/nonexistent/x.pem", pin), QK_ERR_IO);
    /* The files work as server credentials. */
    qk_tls_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.alpn[0] = "hq-interop";
    cfg.cert_file = cp;
    cfg.key_file = kp;
    int err = 1;
    qk_tls *t = qk_tls_new(&cfg, 1, NULL, 0, &err);
    assert_non_null(t);
    qk_tls_del(t);
    unlink(cp);
    unlink(kp);
    rmdir(dir);
}

/* A server session made with shared credentials (certificate, key and
 * priority loaded once, qk_tls_creds) and no certificate of its own. */
static qk_tls *make_with_creds(const qk_tls_creds *creds, const char *priority)
{
    qk_tls_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.alpn[0] = "hq-interop";
    cfg.creds = creds;
    cfg.priority = priority;
    int err = 1;
    qk_tls *t = qk_tls_new(&cfg, 1, (const uint8_t *)"server-tp", 9, &err);
    assert_non_null(t);
    assert_int_equal(err, 0);
    return t;
}

static void test_shared_creds(void **state)
{
    (void)state;
    qk_tls_config kc;
    memset(&kc, 0, sizeof kc);
    int err = 0;
    assert_null(qk_tls_creds_new(&kc, &err)); /* no certificate */
    assert_int_equal(err, QK_ERR_CONFIG);
    kc.cert_pem = g_cert;
    kc.key_pem = g_key;
    kc.priority = "NORMAL:+NO-SUCH-THING";
    assert_null(qk_tls_creds_new(&kc, &err));
    assert_int_equal(err, QK_ERR_CONFIG);
    assert_null(qk_tls_creds_new(NULL, &err));
    assert_int_equal(err, QK_ERR_INVALID_ARG);
    kc.priority = NULL;
    qk_tls_creds *creds = qk_tls_creds_new(&kc, &err);
    assert_non_null(creds);
    assert_int_equal(err, 0);
    uint8_t pin[32];
    assert_int_equal(qk_cert_pin_pem(g_cert, strlen(g_cert), pin), 0);
    /* Two sessions on the same credentials; the client checks the pin, so the
     * certificate came from them. The second session asks for another
     * priority than the one creds parsed: it parses its own. */
    const char *chacha =
        "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+CHACHA20-POLY1305:%DISABLE_TLS13_COMPAT_MODE";
    for (int i = 0; i < 2; i++) {
        side c = {0}, s = {0};
        c.tls = make(0, "hq-interop", NULL, QK_TLS_VERIFY_PIN, pin, "client-tp", NULL);
        s.tls = make_with_creds(creds, i ? chacha : NULL);
        run(&c, &s);
        check_success(&c, &s, i ? QK_SUITE_CHACHA20_POLY1305 : QK_SUITE_AES_128_GCM);
        /* Drained handshake output holds no buffer (move_bytes consumed it). */
        for (int lv = 0; lv < QK_LEVEL_COUNT; lv++) {
            const uint8_t *p = (const uint8_t *)"x";
            size_t n = 1;
            assert_int_equal(qk_tls_out(s.tls, (qk_crypto_level)lv, &p, &n), 0);
            assert_null(p);
            assert_int_equal(n, 0);
        }
        qk_tls_del(c.tls);
        qk_tls_del(s.tls);
    }
    qk_tls_creds_del(creds);
    qk_tls_creds_del(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handshake_pin),      cmocka_unit_test(test_handshake_suites),
        cmocka_unit_test(test_wrong_pin),          cmocka_unit_test(test_alpn_mismatch),
        cmocka_unit_test(test_no_common_suite),    cmocka_unit_test(test_keylog),
        cmocka_unit_test(test_keylog_env_ignored), cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_pin_printers),       cmocka_unit_test(test_cert_files),
        cmocka_unit_test(test_shared_creds),
    };
    return cmocka_run_group_tests(tests, setup_cert, teardown_cert);
}
