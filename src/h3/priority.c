/* SPDX-License-Identifier: MIT */
/* RFC 9218 priority signals: the `priority` field value (an RFC 8941
 * Structured Field Dictionary) and PRIORITY_UPDATE frames on the peer's
 * control stream. */
#include "priority.h"

#include <string.h>

/* ---- RFC 8941 dictionary -------------------------------------------------- */

typedef struct sf {
    const char *p, *end;
} sf;

enum { SF_NONE, SF_INT, SF_BOOL, SF_OTHER };

typedef struct sf_item {
    int type;
    long long ival; /* SF_INT value, SF_BOOL 0/1 */
} sf_item;

static bool is_lc(char c)
{
    return c >= 'a' && c <= 'z';
}
static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}
static bool is_alpha(char c)
{
    return is_lc(c) || (c >= 'A' && c <= 'Z');
}

static void sp(sf *s)
{
    while (s->p < s->end && *s->p == ' ') s->p++;
}

static void ows(sf *s)
{
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t')) s->p++;
}

/* RFC 8941 §4.2.3.3: lcalpha / "*" then lcalpha / DIGIT / "_" / "-" / "." / "*". */
static bool parse_key(sf *s, const char **k, size_t *klen)
{
    const char *b = s->p;
    if (s->p == s->end || !(is_lc(*s->p) || *s->p == '*')) return false;
    while (s->p < s->end && (is_lc(*s->p) || is_digit(*s->p) || strchr("_-.*", *s->p))) s->p++;
    *k = b;
    *klen = (size_t)(s->p - b);
    return true;
}

/* RFC 8941 §4.2.4: integer (at most 15 digits) or decimal (12.3 digits). */
static bool parse_number(sf *s, sf_item *it)
{
    bool neg = false, dec = false;
    int digits = 0, frac = 0;
    long long v = 0;
    if (*s->p == '-') {
        neg = true;
        s->p++;
    }
    if (s->p == s->end || !is_digit(*s->p)) return false;
    for (; s->p < s->end; s->p++) {
        char c = *s->p;
        if (is_digit(c)) {
            if (dec) {
                if (++frac > 3) return false;
            } else {
                if (++digits > 15) return false;
                v = v * 10 + (c - '0');
            }
        } else if (c == '.' && !dec) {
            if (digits > 12) return false;
            dec = true;
        } else {
            break;
        }
    }
    if (dec && frac == 0) return false;
    it->type = dec ? SF_OTHER : SF_INT;
    it->ival = neg ? -v : v;
    return true;
}

/* RFC 8941 §4.2.5 string, §4.2.6 token, §4.2.7 byte sequence, §4.2.8 boolean. */
static bool parse_bare(sf *s, sf_item *it)
{
    if (s->p == s->end) return false;
    char c = *s->p;
    it->type = SF_OTHER;
    if (c == '-' || is_digit(c)) return parse_number(s, it);
    if (c == '"') {
        for (s->p++; s->p < s->end; s->p++) {
            c = *s->p;
            if (c == '\\') {
                if (++s->p == s->end || (*s->p != '"' && *s->p != '\\')) return false;
            } else if (c == '"') {
                s->p++;
                return true;
            } else if (c < 0x20 || c > 0x7e) {
                return false;
            }
        }
        return false;
    }
    if (c == '*' || is_alpha(c)) {
        for (s->p++; s->p < s->end; s->p++) {
            c = *s->p;
            if (!(is_alpha(c) || is_digit(c) || strchr("!#$%&'*+-.^_`|~:/", c))) break;
        }
        return true;
    }
    if (c == ':') {
        for (s->p++; s->p < s->end && *s->p != ':'; s->p++)
            if (!(is_alpha(*s->p) || is_digit(*s->p) || strchr("+/=", *s->p))) return false;
        if (s->p == s->end) return false;
        s->p++;
        return true;
    }
    if (c == '?') {
        if (s->end - s->p < 2 || (s->p[1] != '0' && s->p[1] != '1')) return false;
        it->type = SF_BOOL;
        it->ival = s->p[1] == '1';
        s->p += 2;
        return true;
    }
    return false;
}

/* RFC 8941 §4.2.3.2: parameters (parsed and ignored). */
static bool parse_params(sf *s)
{
    while (s->p < s->end && *s->p == ';') {
        s->p++;
        sp(s);
        const char *k;
        size_t kl;
        if (!parse_key(s, &k, &kl)) return false;
        if (s->p < s->end && *s->p == '=') {
            s->p++;
            sf_item it;
            if (!parse_bare(s, &it)) return false;
        }
    }
    return true;
}

/* RFC 8941 §4.2.1.1 item or §4.2.1.2 inner list (an inner list is SF_OTHER). */
static bool parse_member_value(sf *s, sf_item *it)
{
    if (s->p < s->end && *s->p == '(') {
        it->type = SF_OTHER;
        s->p++;
        for (;;) {
            sp(s);
            if (s->p == s->end) return false;
            if (*s->p == ')') {
                s->p++;
                return parse_params(s);
            }
            sf_item inner;
            if (!parse_bare(s, &inner) || !parse_params(s)) return false;
            if (s->p == s->end || (*s->p != ' ' && *s->p != ')')) return false;
        }
    }
    return parse_bare(s, it) && parse_params(s);
}

int qk_h3_priority_parse(const char *value, size_t len, qk_h3_priority *p)
{
    sf s = {value, value + len};
    sf_item u = {SF_NONE, 0}, inc = {SF_NONE, 0};
    while (s.end > s.p && (s.end[-1] == ' ' || s.end[-1] == '\t')) s.end--;
    sp(&s);
    while (s.p < s.end) {
        const char *k;
        size_t kl;
        sf_item it = {SF_BOOL, 1}; /* RFC 8941 §4.2.2: a bare key is true */
        if (!parse_key(&s, &k, &kl)) return QK_ERR_INVALID_ARG;
        if (s.p < s.end && *s.p == '=') {
            s.p++;
            if (!parse_member_value(&s, &it)) return QK_ERR_INVALID_ARG;
        } else if (!parse_params(&s)) {
            return QK_ERR_INVALID_ARG;
        }
        /* RFC 8941 §4.2.2: a later member with the same key overwrites. */
        if (kl == 1 && k[0] == 'u') u = it;
        if (kl == 1 && k[0] == 'i') inc = it;
        ows(&s);
        if (s.p == s.end) break;
        if (*s.p++ != ',') return QK_ERR_INVALID_ARG;
        ows(&s);
        if (s.p == s.end) return QK_ERR_INVALID_ARG; /* trailing comma */
    }
    /* RFC 9218 §4.1: u outside 0..7 (or not an integer) is ignored. */
    if (u.type == SF_INT && u.ival >= 0 && u.ival <= 7) p->urgency = (uint8_t)u.ival;
    /* RFC 9218 §4.2: i that is not a Boolean is ignored. */
    if (inc.type == SF_BOOL) p->incremental = inc.ival != 0;
    return 0;
}

/* ---- control stream scanner ----------------------------------------------- */

enum { H3S_STREAM_TYPE, H3S_FRAME_TYPE, H3S_FRAME_LEN, H3S_PAYLOAD };

void qk_h3_ctrl_scan_init(qk_h3_ctrl_scan *s)
{
    memset(s, 0, sizeof *s);
    s->state = H3S_STREAM_TYPE;
}

bool qk_h3_ctrl_scan_ignored(const qk_h3_ctrl_scan *s)
{
    return s->ignore;
}

/* One byte of a QUIC varint (RFC 9000 §16); true when *v is complete. */
static bool varint_byte(qk_h3_ctrl_scan *s, uint8_t b, uint64_t *v)
{
    if (s->vlen == 0) s->vneed = (size_t)1 << (b >> 6);
    s->vbuf[s->vlen++] = b;
    if (s->vlen < s->vneed) return false;
    *v = s->vbuf[0] & 0x3f;
    for (size_t i = 1; i < s->vlen; i++) *v = (*v << 8) | s->vbuf[i];
    s->vlen = 0;
    return true;
}

/* A complete PRIORITY_UPDATE payload: element id varint, then the value. */
static void emit(qk_h3_ctrl_scan *s, qk_h3_prio_update_fn fn, void *ctx)
{
    if (s->plen == 0) return;
    size_t idlen = (size_t)1 << (s->payload[0] >> 6);
    if (idlen > s->plen) return; /* RFC 9114 §7.1: nghttp3 reports H3_FRAME_ERROR */
    uint64_t id = s->payload[0] & 0x3f;
    for (size_t i = 1; i < idlen; i++) id = (id << 8) | s->payload[i];
    fn(ctx, id, (const char *)s->payload + idlen, s->plen - idlen);
}

static void frame_start(qk_h3_ctrl_scan *s, qk_h3_prio_update_fn fn, void *ctx)
{
    s->plen = 0;
    s->state = H3S_PAYLOAD;
    s->keep = s->ftype == QK_H3_FRAME_PRIORITY_UPDATE && s->left <= sizeof s->payload;
    if (s->left == 0) {
        if (s->keep) emit(s, fn, ctx);
        s->state = H3S_FRAME_TYPE;
    }
}

void qk_h3_ctrl_scan_feed(qk_h3_ctrl_scan *s, const uint8_t *p, size_t n, qk_h3_prio_update_fn fn,
                          void *ctx)
{
    uint64_t v;
    while (n && !s->ignore) {
        if (s->state == H3S_PAYLOAD) {
            size_t take = s->left < n ? (size_t)s->left : n;
            if (s->keep) memcpy(s->payload + s->plen, p, take);
            if (s->keep) s->plen += take;
            p += take;
            n -= take;
            s->left -= take;
            if (s->left == 0) {
                if (s->keep) emit(s, fn, ctx);
                s->state = H3S_FRAME_TYPE;
            }
            continue;
        }
        uint8_t b = *p++;
        n--;
        if (!varint_byte(s, b, &v)) continue;
        if (s->state == H3S_STREAM_TYPE) {
            s->ignore = v != 0; /* RFC 9114 §6.2.1: 0x00 is the control stream */
            s->state = H3S_FRAME_TYPE;
        } else if (s->state == H3S_FRAME_TYPE) {
            s->ftype = v;
            s->state = H3S_FRAME_LEN;
        } else {
            s->left = v;
            frame_start(s, fn, ctx);
        }
    }
}
