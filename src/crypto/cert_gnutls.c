/* SPDX-License-Identifier: MIT */
/* Self-signed certificate generation and SPKI pins for the CLI (GnuTLS). */
#include "crypto/tls.h"
#include "crypto/pin_gnutls.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

static char *datum_to_str(const gnutls_datum_t *d)
{
    char *s = malloc(d->size + 1);
    if (!s) return NULL;
    memcpy(s, d->data, d->size);
    s[d->size] = '\0';
    return s;
}

/* Fill and self-sign crt with key. */
static int build_cert(gnutls_x509_crt_t crt, gnutls_x509_privkey_t key, const char *name,
                      int64_t not_before_s, unsigned valid_days)
{
    uint8_t serial[16];
    if (gnutls_rnd(GNUTLS_RND_NONCE, serial, sizeof serial) < 0) return -1;
    serial[0] &= 0x7f; /* positive INTEGER */
    if (gnutls_x509_crt_set_version(crt, 3) < 0 ||
        gnutls_x509_crt_set_serial(crt, serial, sizeof serial) < 0 ||
        gnutls_x509_crt_set_activation_time(crt, (time_t)not_before_s) < 0 ||
        gnutls_x509_crt_set_expiration_time(crt, (time_t)(not_before_s + 86400ll * valid_days)) <
            0 ||
        gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, name,
                                      (unsigned)strlen(name)) < 0 ||
        gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, name, (unsigned)strlen(name),
                                             GNUTLS_FSAN_SET) < 0 ||
        gnutls_x509_crt_set_key(crt, key) < 0 ||
        gnutls_x509_crt_set_basic_constraints(crt, 0, -1) < 0 ||
        gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_DIGITAL_SIGNATURE) < 0 ||
        gnutls_x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_SERVER, 0) < 0)
        return -1;
    return gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0) < 0 ? -1 : 0;
}

int qk_cert_generate(const char *name, int64_t not_before_s, unsigned valid_days, char **cert_pem,
                     char **key_pem)
{
    gnutls_x509_privkey_t key = NULL;
    gnutls_x509_crt_t crt = NULL;
    gnutls_datum_t c = {NULL, 0}, k = {NULL, 0};
    int rc = QK_ERR_TLS;
    if (!name || !*name || strlen(name) > 253 || valid_days == 0 || !cert_pem || !key_pem)
        return QK_ERR_INVALID_ARG;
    *cert_pem = *key_pem = NULL;
    if (gnutls_x509_privkey_init(&key) < 0 || gnutls_x509_crt_init(&crt) < 0) goto out;
    if (gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA,
                                     GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0) < 0)
        goto out;
    if (build_cert(crt, key, name, not_before_s, valid_days) < 0) goto out;
    if (gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &c) < 0 ||
        gnutls_x509_privkey_export2_pkcs8(key, GNUTLS_X509_FMT_PEM, NULL, GNUTLS_PKCS_PLAIN, &k) <
            0)
        goto out;
    rc = QK_ERR_NOMEM;
    *cert_pem = datum_to_str(&c);
    *key_pem = datum_to_str(&k);
    if (*cert_pem && *key_pem) rc = 0;
out:
    if (rc != 0 && cert_pem && key_pem) {
        free(*cert_pem);
        free(*key_pem);
        *cert_pem = *key_pem = NULL;
    }
    if (k.data) {
        memset(k.data, 0, k.size);
        gnutls_free(k.data);
    }
    gnutls_free(c.data);
    if (crt) gnutls_x509_crt_deinit(crt);
    if (key) gnutls_x509_privkey_deinit(key);
    return rc;
}

/* Write data to path via a temporary file and rename(2). */
static int write_atomic(const char *path, const char *data, mode_t mode)
{
    size_t pl = strlen(path);
    char *tmp = malloc(pl + 16);
    if (!tmp) return QK_ERR_NOMEM;
    snprintf(tmp, pl + 16, "%s.tmpXXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        free(tmp);
        return QK_ERR_IO;
    }
    size_t len = strlen(data), done = 0;
    int ok = fchmod(fd, mode) == 0;
    while (ok && done < len) {
        ssize_t n = write(fd, data + done, len - done);
        if (n <= 0)
            ok = 0;
        else
            done += (size_t)n;
    }
    if (ok) ok = fsync(fd) == 0;
    if (close(fd) != 0) ok = 0;
    if (ok) ok = rename(tmp, path) == 0;
    if (!ok) unlink(tmp);
    free(tmp);
    return ok ? 0 : QK_ERR_IO;
}

int qk_cert_generate_files(const char *name, int64_t not_before_s, unsigned valid_days,
                           const char *cert_path, const char *key_path)
{
    char *c = NULL, *k = NULL;
    if (!cert_path || !key_path) return QK_ERR_INVALID_ARG;
    int rc = qk_cert_generate(name, not_before_s, valid_days, &c, &k);
    if (rc == 0) rc = write_atomic(key_path, k, 0600);
    if (rc == 0) {
        rc = write_atomic(cert_path, c, 0644);
        if (rc != 0) unlink(key_path); /* never leave half a pair */
    }
    if (k) {
        memset(k, 0, strlen(k));
        free(k);
    }
    free(c);
    return rc;
}

int qk_cert_pin_pem(const char *cert_pem, size_t len, uint8_t pin[QK_TLS_PIN_BYTES])
{
    gnutls_x509_crt_t crt;
    gnutls_datum_t d = {(unsigned char *)cert_pem, (unsigned)len};
    size_t id_len = QK_TLS_PIN_BYTES;
    if (!cert_pem || !pin || len > UINT32_MAX) return QK_ERR_INVALID_ARG;
    if (gnutls_x509_crt_init(&crt) < 0) return QK_ERR_TLS;
    int rc = QK_ERR_CONFIG;
    if (gnutls_x509_crt_import(crt, &d, GNUTLS_X509_FMT_PEM) == 0 &&
        gnutls_x509_crt_get_key_id(crt, GNUTLS_KEYID_USE_SHA256, pin, &id_len) == 0 &&
        id_len == QK_TLS_PIN_BYTES)
        rc = 0;
    gnutls_x509_crt_deinit(crt);
    return rc;
}

int qk_cert_pin_file(const char *path, uint8_t pin[QK_TLS_PIN_BYTES])
{
    gnutls_datum_t d;
    if (!path) return QK_ERR_INVALID_ARG;
    if (gnutls_load_file(path, &d) < 0) return QK_ERR_IO;
    int rc = qk_cert_pin_pem((const char *)d.data, d.size, pin);
    gnutls_free(d.data);
    return rc;
}

void qk_pin_to_hex(const uint8_t pin[QK_TLS_PIN_BYTES], char out[65])
{
    static const char hx[] = "0123456789abcdef";
    for (int i = 0; i < QK_TLS_PIN_BYTES; i++) {
        out[2 * i] = hx[pin[i] >> 4];
        out[2 * i + 1] = hx[pin[i] & 15];
    }
    out[64] = '\0';
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void qk_pin_to_base64(const uint8_t pin[QK_TLS_PIN_BYTES], char out[45])
{
    size_t o = 0;
    for (size_t i = 0; i < QK_TLS_PIN_BYTES; i += 3) {
        uint32_t v = (uint32_t)pin[i] << 16;
        size_t rem = QK_TLS_PIN_BYTES - i;
        if (rem > 1) v |= (uint32_t)pin[i + 1] << 8;
        if (rem > 2) v |= pin[i + 2];
        out[o++] = b64[(v >> 18) & 63];
        out[o++] = b64[(v >> 12) & 63];
        out[o++] = rem > 1 ? b64[(v >> 6) & 63] : '=';
        out[o++] = rem > 2 ? b64[v & 63] : '=';
    }
    out[o] = '\0';
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

int qk_pin_parse(const char *s, uint8_t pin[QK_TLS_PIN_BYTES])
{
    if (!s || !pin) return QK_ERR_INVALID_ARG;
    if (!strncmp(s, "sha256/", 7) || !strncmp(s, "sha256:", 7)) s += 7;
    size_t n = strlen(s);
    if (n == 64) {
        for (int i = 0; i < QK_TLS_PIN_BYTES; i++) {
            int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
            if (hi < 0 || lo < 0) return QK_ERR_INVALID_ARG;
            pin[i] = (uint8_t)(hi << 4 | lo);
        }
        return 0;
    }
    if (n != 44 || s[43] != '=' || s[42] == '=') return QK_ERR_INVALID_ARG;
    uint8_t tmp[33];
    size_t o = 0;
    for (size_t i = 0; i < 44; i += 4) {
        uint32_t v = 0;
        for (size_t j = 0; j < 4; j++) {
            char c = s[i + j];
            const char *p = c == '=' ? NULL : strchr(b64, c);
            if (c == '=' && i + j == 43) p = b64; /* padding counts as zero bits */
            if (!p || c == '\0') return QK_ERR_INVALID_ARG;
            v = v << 6 | (uint32_t)(p - b64);
        }
        tmp[o++] = (uint8_t)(v >> 16);
        tmp[o++] = (uint8_t)(v >> 8);
        tmp[o++] = (uint8_t)v;
    }
    memcpy(pin, tmp, QK_TLS_PIN_BYTES);
    return 0;
}

bool qk_gnutls_peer_spki(gnutls_session_t s, uint8_t out[QK_PIN_BYTES])
{
    unsigned n = 0;
    const gnutls_datum_t *certs = gnutls_certificate_get_peers(s, &n);
    gnutls_x509_crt_t crt;
    uint8_t id[64];
    size_t id_len = sizeof id;
    bool ok = false;
    if (!certs || n == 0 || gnutls_x509_crt_init(&crt) < 0) return false;
    if (gnutls_x509_crt_import(crt, &certs[0], GNUTLS_X509_FMT_DER) == 0 &&
        gnutls_x509_crt_get_key_id(crt, GNUTLS_KEYID_USE_SHA256, id, &id_len) == 0 &&
        id_len == QK_PIN_BYTES) {
        memcpy(out, id, QK_PIN_BYTES);
        ok = true;
    }
    gnutls_x509_crt_deinit(crt);
    return ok;
}

bool qk_gnutls_peer_pin_ok(gnutls_session_t s, const uint8_t pin[QK_PIN_BYTES])
{
    uint8_t id[QK_PIN_BYTES];
    if (!qk_gnutls_peer_spki(s, id)) return false;
    uint8_t d = 0; /* constant time */
    for (size_t i = 0; i < QK_PIN_BYTES; i++) d |= (uint8_t)(id[i] ^ pin[i]);
    return d == 0;
}
