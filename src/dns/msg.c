/* SPDX-License-Identifier: MIT */
/* DNS message codec (see dns/msg.h). */
#include "dns/msg.h"

#include <string.h>

int qk_dns_name_read(const uint8_t *msg, size_t len, size_t *off, qk_dns_name *out)
{
    size_t pos = *off, end_pos = 0, n = 0;
    unsigned jumps = 0;
    bool jumped = false;
    for (;;) {
        if (pos >= len) return QK_ERR_TRUNCATED;
        uint8_t b = msg[pos];
        if ((b & 0xc0) == 0xc0) { /* RFC 1035 §4.1.4: a pointer */
            if (pos + 1 >= len) return QK_ERR_TRUNCATED;
            size_t target = ((size_t)(b & 0x3f) << 8) | msg[pos + 1];
            /* Only backward pointers, bounded: every input terminates. */
            if (target >= pos || ++jumps > QK_DNS_MAX_JUMPS) return QK_ERR_PROTOCOL_VIOLATION;
            if (!jumped) end_pos = pos + 2;
            jumped = true;
            pos = target;
            continue;
        }
        if (b & 0xc0) return QK_ERR_PROTOCOL_VIOLATION; /* 01/10: RFC 6891 §5, obsolete */
        if (pos + 1 + b > len) return QK_ERR_TRUNCATED;
        if (n + 1 + b > QK_DNS_MAX_NAME_BYTES) return QK_ERR_PROTOCOL_VIOLATION; /* §2.3.4 */
        memcpy(out->wire + n, msg + pos, 1 + (size_t)b);
        n += 1 + (size_t)b;
        pos += 1 + (size_t)b;
        if (b == 0) break;
    }
    out->len = n;
    *off = jumped ? end_pos : pos;
    return 0;
}

static int read_rr(const uint8_t *buf, size_t len, size_t *off, qk_dns_rr *rr)
{
    int rc = qk_dns_name_read(buf, len, off, &rr->name);
    if (rc) return rc;
    qk_rd r = qk_rd_make(buf + *off, len - *off);
    const uint8_t *rdata;
    if (!qk_rd_u16(&r, &rr->type) || !qk_rd_u16(&r, &rr->rclass) || !qk_rd_u32(&r, &rr->ttl) ||
        !qk_rd_u16(&r, &rr->rdlen) || !qk_rd_bytes(&r, rr->rdlen, &rdata))
        return QK_ERR_TRUNCATED;
    rr->rdata = rdata;
    *off = len - qk_rd_left(&r);
    return 0;
}

/* Additional section: remember the OPT record (RFC 6891 §6.1.1: at most one,
 * owner the root). */
static int read_additional(const uint8_t *buf, size_t len, size_t *off, qk_dns_msg *m)
{
    for (unsigned i = 0; i < m->arcount; i++) {
        qk_dns_rr rr;
        int rc = read_rr(buf, len, off, &rr);
        if (rc) return rc;
        if (rr.type != QK_DNS_TYPE_OPT) continue;
        if (m->has_edns || rr.name.len != 1) return QK_ERR_PROTOCOL_VIOLATION;
        m->has_edns = true;
        /* RFC 6891 §6.2.5: values below 512 are treated as 512. */
        m->edns_size = rr.rclass < 512 ? 512 : rr.rclass;
        m->edns_version = (uint8_t)(rr.ttl >> 16);
    }
    return 0;
}

int qk_dns_decode(const uint8_t *buf, size_t len, qk_dns_msg *m)
{
    if (!buf || !m) return QK_ERR_INVALID_ARG;
    memset(m, 0, offsetof(qk_dns_msg, an));
    m->n_an = 0;
    m->has_edns = false;
    m->edns_size = 0;
    m->edns_version = 0;
    qk_rd r = qk_rd_make(buf, len);
    if (!qk_rd_u16(&r, &m->id) || !qk_rd_u16(&r, &m->flags) || !qk_rd_u16(&r, &m->qdcount) ||
        !qk_rd_u16(&r, &m->ancount) || !qk_rd_u16(&r, &m->nscount) || !qk_rd_u16(&r, &m->arcount))
        return QK_ERR_TRUNCATED;
    size_t off = QK_DNS_HEADER_BYTES;
    for (unsigned i = 0; i < m->qdcount; i++) {
        qk_dns_name name;
        int rc = qk_dns_name_read(buf, len, &off, &name);
        if (rc) return rc;
        if (len - off < 4) return QK_ERR_TRUNCATED;
        if (i == 0) {
            m->qname = name;
            m->qtype = (uint16_t)(buf[off] << 8 | buf[off + 1]);
            m->qclass = (uint16_t)(buf[off + 2] << 8 | buf[off + 3]);
            m->has_question = true;
        }
        off += 4;
    }
    for (unsigned i = 0; i < m->ancount; i++) {
        qk_dns_rr rr;
        int rc = read_rr(buf, len, &off, &rr);
        if (rc) return rc;
        if (rr.type == QK_DNS_TYPE_OPT) return QK_ERR_PROTOCOL_VIOLATION;
        if (m->n_an < QK_DNS_MAX_ANSWERS) m->an[m->n_an++] = rr;
    }
    for (unsigned i = 0; i < m->nscount; i++) {
        qk_dns_rr rr;
        int rc = read_rr(buf, len, &off, &rr);
        if (rc) return rc;
        if (rr.type == QK_DNS_TYPE_OPT) return QK_ERR_PROTOCOL_VIOLATION;
    }
    return read_additional(buf, len, &off, m);
}

int qk_dns_name_from_text(const char *text, qk_dns_name *out)
{
    if (!text || !out) return QK_ERR_INVALID_ARG;
    size_t n = 0, tl = strlen(text);
    if (tl && text[tl - 1] == '.') tl--;
    size_t i = 0;
    while (i < tl) {
        size_t j = i;
        while (j < tl && text[j] != '.') j++;
        size_t l = j - i;
        if (l == 0 || l > QK_DNS_MAX_LABEL_BYTES || n + 1 + l + 1 > QK_DNS_MAX_NAME_BYTES)
            return QK_ERR_INVALID_ARG;
        out->wire[n++] = (uint8_t)l;
        memcpy(out->wire + n, text + i, l);
        n += l;
        i = j + 1;
        if (j < tl && i == tl) return QK_ERR_INVALID_ARG; /* "a..": trailing empty label */
    }
    out->wire[n++] = 0;
    out->len = n;
    return 0;
}

int qk_dns_name_to_text(const qk_dns_name *n, char *buf, size_t cap)
{
    size_t o = 0, i = 0;
    while (i < n->len && n->wire[i]) {
        size_t l = n->wire[i];
        if (o && o >= cap) return QK_ERR_BUFFER_TOO_SMALL;
        if (o) buf[o++] = '.';
        if (o + l >= cap) return QK_ERR_BUFFER_TOO_SMALL;
        memcpy(buf + o, n->wire + i + 1, l);
        o += l;
        i += 1 + l;
    }
    if (o >= cap) return QK_ERR_BUFFER_TOO_SMALL;
    buf[o] = 0;
    return (int)o;
}

static uint8_t lower(uint8_t c)
{
    return c >= 'A' && c <= 'Z' ? (uint8_t)(c + 32) : c;
}

bool qk_dns_name_suffix(const qk_dns_name *name, const qk_dns_name *suffix, size_t *prefix_bytes)
{
    if (suffix->len > name->len) return false;
    /* Walk name's labels until the rest is exactly as long as the suffix. */
    size_t i = 0;
    while (name->len - i > suffix->len) {
        if (!name->wire[i]) return false;
        i += 1 + (size_t)name->wire[i];
    }
    if (name->len - i != suffix->len) return false;
    for (size_t k = 0; k < suffix->len; k++)
        if (lower(name->wire[i + k]) != lower(suffix->wire[k])) return false; /* RFC 4343 */
    if (prefix_bytes) *prefix_bytes = i;
    return true;
}

bool qk_dns_put_header(qk_wr *w, uint16_t id, uint16_t flags, uint16_t qd, uint16_t an, uint16_t ns,
                       uint16_t ar)
{
    return qk_wr_u16(w, id) && qk_wr_u16(w, flags) && qk_wr_u16(w, qd) && qk_wr_u16(w, an) &&
           qk_wr_u16(w, ns) && qk_wr_u16(w, ar);
}

bool qk_dns_put_question(qk_wr *w, const qk_dns_name *name, uint16_t type, uint16_t rclass)
{
    return qk_wr_bytes(w, name->wire, name->len) && qk_wr_u16(w, type) && qk_wr_u16(w, rclass);
}

bool qk_dns_put_rr_ptr(qk_wr *w, uint16_t type, uint32_t ttl, const uint8_t *rdata, uint16_t rdlen)
{
    return qk_wr_u16(w, QK_DNS_QUESTION_PTR) && qk_wr_u16(w, type) &&
           qk_wr_u16(w, QK_DNS_CLASS_IN) && qk_wr_u32(w, ttl) && qk_wr_u16(w, rdlen) &&
           (!rdlen || qk_wr_bytes(w, rdata, rdlen));
}

size_t qk_dns_txt_rdata_bytes(size_t len)
{
    size_t strings = len ? (len + QK_DNS_TXT_STRING_MAX - 1) / QK_DNS_TXT_STRING_MAX : 1;
    return len + strings;
}

bool qk_dns_put_txt(qk_wr *w, uint32_t ttl, const uint8_t *data, size_t len)
{
    size_t rdlen = qk_dns_txt_rdata_bytes(len);
    if (rdlen > 0xffff) return false;
    if (!qk_dns_put_rr_ptr(w, QK_DNS_TYPE_TXT, ttl, NULL, 0)) return false;
    w->p -= 2; /* rewrite RDLENGTH */
    if (!qk_wr_u16(w, (uint16_t)rdlen) || qk_wr_left(w) < rdlen) return false;
    size_t off = 0;
    do { /* RFC 1035 §3.3.14: one or more <character-string> */
        size_t n = len - off > QK_DNS_TXT_STRING_MAX ? QK_DNS_TXT_STRING_MAX : len - off;
        qk_wr_u8(w, (uint8_t)n);
        if (n) qk_wr_bytes(w, data + off, n);
        off += n;
    } while (off < len);
    return true;
}

bool qk_dns_put_opt(qk_wr *w, uint16_t udp_size)
{
    /* RFC 6891 §6.1.2: root owner, TYPE OPT, CLASS = payload size, TTL = ext
     * RCODE/version/flags (all 0), no options. */
    return qk_wr_u8(w, 0) && qk_wr_u16(w, QK_DNS_TYPE_OPT) && qk_wr_u16(w, udp_size) &&
           qk_wr_u32(w, 0) && qk_wr_u16(w, 0);
}

int qk_dns_txt_read(const uint8_t *rdata, size_t rdlen, uint8_t *out, size_t cap)
{
    size_t i = 0, o = 0;
    while (i < rdlen) {
        size_t n = rdata[i++];
        if (n > rdlen - i) return QK_ERR_TRUNCATED;
        if (n > cap - o) return QK_ERR_BUFFER_TOO_SMALL;
        memcpy(out + o, rdata + i, n);
        o += n;
        i += n;
    }
    return (int)o;
}
