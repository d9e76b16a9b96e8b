/* SPDX-License-Identifier: MIT */
/* The DNS carrier's client side and base32 (see dns/carrier.h, quack/dns.h). */
#include "dns/carrier.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

static const char b32[] = "abcdefghijklmnopqrstuvwxyz234567"; /* RFC 4648 §6 */

size_t qk_base32_len(size_t n)
{
    return (n * 8 + 4) / 5;
}

void qk_base32_encode(const uint8_t *in, size_t n, char *out)
{
    uint32_t acc = 0;
    int bits = 0;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        acc = (acc << 8) | in[i];
        bits += 8;
        while (bits >= 5) {
            out[o++] = b32[(acc >> (bits - 5)) & 31];
            bits -= 5;
        }
    }
    if (bits) out[o++] = b32[(acc << (5 - bits)) & 31];
}

static int b32_value(char ch)
{
    if (ch >= 'a' && ch <= 'z') return ch - 'a';
    if (ch >= 'A' && ch <= 'Z') return ch - 'A'; /* resolvers change case (0x20) */
    if (ch >= '2' && ch <= '7') return ch - '2' + 26;
    return -1;
}

int qk_base32_decode(const char *in, size_t n, uint8_t *out, size_t cap)
{
    uint32_t acc = 0;
    int bits = 0;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        int v = b32_value(in[i]);
        if (v < 0) return QK_ERR_PROTOCOL_VIOLATION;
        acc = (acc << 5) | (uint32_t)v;
        bits += 5;
        if (bits >= 8) {
            if (o == cap) return QK_ERR_BUFFER_TOO_SMALL;
            out[o++] = (uint8_t)(acc >> (bits - 8));
            bits -= 8;
        }
    }
    if (bits >= 5 || (acc & ((1u << bits) - 1))) return QK_ERR_PROTOCOL_VIOLATION; /* canonical */
    return (int)o;
}

/* Base32 characters that fit in `room` text characters as labels of at most
 * QK_DNS_LABEL_CHARS joined by dots, each label followed by a dot. */
static size_t chars_fitting(size_t room)
{
    size_t c = room - room / (QK_DNS_LABEL_CHARS + 1);
    while (c && c + (c + QK_DNS_LABEL_CHARS - 1) / QK_DNS_LABEL_CHARS > room) c--;
    return c;
}

size_t qk_dns_max_datagram(size_t domain_text, size_t max_qname)
{
    /* name = labels "." domain: chars + labels <= max_qname - domain_text */
    if (max_qname <= domain_text + 2) return 0;
    size_t chars = chars_fitting(max_qname - domain_text);
    size_t bytes = chars * 5 / 8; /* whole bytes only */
    while (bytes && qk_base32_len(bytes) > chars) bytes--;
    return bytes > QK_DNS_HDR_BYTES + 4 ? bytes - QK_DNS_HDR_BYTES : 0;
}

int qk_dns_client_init(qk_dns_client *c, const char *domain, size_t max_qname, uint32_t id)
{
    if (!c || !domain) return QK_ERR_INVALID_ARG;
    memset(c, 0, sizeof *c);
    if (!max_qname) max_qname = QK_DNS_MAX_QNAME_TEXT;
    if (max_qname < QK_DNS_MIN_QNAME_TEXT || max_qname > QK_DNS_MAX_QNAME_TEXT)
        return QK_ERR_INVALID_ARG;
    if (qk_dns_name_from_text(domain, &c->domain) || c->domain.len < 2) return QK_ERR_INVALID_ARG;
    c->domain_text = c->domain.len - 2; /* wire = text + 2 */
    c->max_qname = max_qname;
    c->max_dgram = qk_dns_max_datagram(c->domain_text, max_qname);
    if (c->max_dgram < 32) return QK_ERR_INVALID_ARG;
    c->id = id & 0xffff; /* a short id: 2 bytes of every name */
    c->edns_bytes = QK_DNS_EDNS_BYTES;
    return 0;
}

int qk_dns_domain_check(const char *domain)
{
    qk_dns_name n;
    if (!domain || qk_dns_name_from_text(domain, &n) || n.len < 2) return QK_ERR_INVALID_ARG;
    return 0;
}

int qk_dns_datagram_bytes(const char *domain, size_t max_qname)
{
    qk_dns_client c;
    int rc = qk_dns_client_init(&c, domain, max_qname, 0);
    return rc ? rc : (int)c.max_dgram;
}

int qk_dns_client_new(const char *domain, size_t max_qname, uint32_t id, qk_dns_client **out)
{
    if (!out) return QK_ERR_INVALID_ARG;
    qk_dns_client *c = malloc(sizeof *c);
    if (!c) return QK_ERR_NOMEM;
    int rc = qk_dns_client_init(c, domain, max_qname, id);
    if (rc) {
        free(c);
        return rc;
    }
    *out = c;
    return 0;
}

void qk_dns_client_del(qk_dns_client *c)
{
    free(c);
}

size_t qk_dns_client_max_datagram(const qk_dns_client *c)
{
    return c->max_dgram;
}

/* The query name: base32 of payload in labels, then the domain. */
static int build_name(const qk_dns_client *c, const uint8_t *payload, size_t n, qk_dns_name *out)
{
    char text[QK_DNS_MAX_QNAME_TEXT + 8];
    size_t chars = qk_base32_len(n);
    qk_base32_encode(payload, n, text);
    size_t o = 0;
    for (size_t i = 0; i < chars; i += QK_DNS_LABEL_CHARS) { /* RFC 1035 §2.3.4 */
        size_t l = chars - i > QK_DNS_LABEL_CHARS ? QK_DNS_LABEL_CHARS : chars - i;
        out->wire[o++] = (uint8_t)l;
        memcpy(out->wire + o, text + i, l);
        o += l;
    }
    if (o + c->domain.len > QK_DNS_MAX_NAME_BYTES) return QK_ERR_TOO_LARGE;
    memcpy(out->wire + o, c->domain.wire, c->domain.len);
    out->len = o + c->domain.len;
    return 0;
}

int qk_dns_client_query(const qk_dns_client *c, uint16_t qid, const uint8_t *dg, size_t len,
                        const uint8_t nonce[4], uint8_t *out, size_t cap)
{
    if (len > c->max_dgram) return QK_ERR_TOO_LARGE;
    uint8_t payload[QK_DNS_MAX_NAME_BYTES];
    payload[0] = (uint8_t)(c->id >> 8);
    payload[1] = (uint8_t)c->id;
    size_t n = QK_DNS_HDR_BYTES;
    if (len) {
        payload[2] = QK_DNS_KIND_DATA;
        memcpy(payload + n, dg, len);
        n += len;
    } else {
        payload[2] = QK_DNS_KIND_POLL;
        memcpy(payload + n, nonce, 4);
        n += 4;
    }
    qk_dns_name name;
    int rc = build_name(c, payload, n, &name);
    if (rc) return rc;
    qk_wr w = qk_wr_make(out, cap);
    if (!qk_dns_put_header(&w, qid, QK_DNS_FLAG_RD, 1, 0, 0, 1) ||
        !qk_dns_put_question(&w, &name, QK_DNS_TYPE_TXT, QK_DNS_CLASS_IN) ||
        !qk_dns_put_opt(&w, c->edns_bytes)) /* RFC 6891 */
        return QK_ERR_BUFFER_TOO_SMALL;
    return (int)(w.p - out);
}

/* The carrier payload of a name under domain: labels before the domain,
 * base32-decoded. Returns its length or an error. */
int qk_dns_name_payload(const qk_dns_name *name, const qk_dns_name *domain, uint8_t *out,
                        size_t cap)
{
    size_t prefix;
    if (!qk_dns_name_suffix(name, domain, &prefix) || !prefix) return QK_ERR_NOT_FOUND;
    char text[QK_DNS_MAX_NAME_BYTES];
    size_t n = 0;
    for (size_t i = 0; i < prefix; i += 1 + (size_t)name->wire[i]) {
        memcpy(text + n, name->wire + i + 1, name->wire[i]);
        n += name->wire[i];
    }
    return qk_base32_decode(text, n, out, cap);
}

static uint32_t payload_id(const uint8_t *p)
{
    return (uint32_t)p[0] << 8 | p[1];
}

/* Split the concatenated TXT strings into length-prefixed datagrams. */
static int split_datagrams(const uint8_t *p, size_t n, qk_dns_dgram_fn fn, void *ctx)
{
    int count = 0;
    size_t i = 0;
    while (i < n) {
        if (n - i < 2) return QK_ERR_PROTOCOL_VIOLATION;
        size_t l = (size_t)p[i] << 8 | p[i + 1];
        i += 2;
        if (l == 0 || l > n - i) return QK_ERR_PROTOCOL_VIOLATION;
        if (fn) fn(ctx, p + i, l);
        i += l;
        count++;
    }
    return count;
}

int qk_dns_client_response(const qk_dns_client *c, const uint8_t *msg, size_t len,
                           qk_dns_dgram_fn fn, void *ctx)
{
    qk_dns_msg m;
    if (qk_dns_decode(msg, len, &m) || !(m.flags & QK_DNS_FLAG_QR) || !m.has_question)
        return QK_ERR_IGNORE;
    uint8_t payload[QK_DNS_MAX_NAME_BYTES];
    int pn = qk_dns_name_payload(&m.qname, &c->domain, payload, sizeof payload);
    if (pn < QK_DNS_HDR_BYTES || payload_id(payload) != c->id) return QK_ERR_IGNORE;
    if (QK_DNS_RCODE(m.flags) != QK_DNS_RCODE_NOERROR) return QK_ERR_PROTOCOL_VIOLATION;
    int total = 0;
    for (size_t i = 0; i < m.n_an; i++) {
        if (m.an[i].type != QK_DNS_TYPE_TXT) continue;
        uint8_t data[QK_DNS_MAX_MSG_BYTES];
        int n = qk_dns_txt_read(m.an[i].rdata, m.an[i].rdlen, data, sizeof data);
        if (n < 0) return QK_ERR_PROTOCOL_VIOLATION;
        int k = split_datagrams(data, (size_t)n, fn, ctx);
        if (k < 0) return k;
        total += k;
    }
    return total;
}

void qk_dns_client_addr(uint32_t id, qk_addr *out)
{
    memset(out, 0, sizeof *out);
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)&out->ss;
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(53);
    a->sin6_addr.s6_addr[0] = 0xfd; /* RFC 4193 unique local: never routed */
    a->sin6_addr.s6_addr[12] = (uint8_t)(id >> 24);
    a->sin6_addr.s6_addr[13] = (uint8_t)(id >> 16);
    a->sin6_addr.s6_addr[14] = (uint8_t)(id >> 8);
    a->sin6_addr.s6_addr[15] = (uint8_t)id;
    out->len = sizeof *a;
}

int qk_dns_addr_client(const qk_addr *a, uint32_t *id)
{
    const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&a->ss;
    if (a->ss.ss_family != AF_INET6 || s6->sin6_addr.s6_addr[0] != 0xfd) return QK_ERR_NOT_FOUND;
    for (int i = 1; i < 12; i++)
        if (s6->sin6_addr.s6_addr[i]) return QK_ERR_NOT_FOUND;
    const uint8_t *b = s6->sin6_addr.s6_addr + 12;
    *id = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
    return 0;
}
