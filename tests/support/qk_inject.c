/* SPDX-License-Identifier: MIT */
#include "qk_inject.h"

#include <stdlib.h>
#include <string.h>

#include "crypto/keys.h"
#include "crypto/packet.h"
#include "transport/conn/conn.h"

#define INJECT_PN_LEN 4 /* a 4-byte pn: the HP sample (RFC 9001 §5.4.2) fits any payload */

/* Header, payload copy, AEAD seal, header protection: RFC 9001 §5.3, §5.4. */
static int seal_with(qk_pkt_keys *k, qk_pkt_type type, uint32_t version, const qk_cid *dcid,
                     const qk_cid *scid, bool key_phase, uint64_t pn, const uint8_t *frames,
                     size_t len, size_t pad_to, uint8_t set_bits, uint8_t *out, size_t cap)
{
    size_t lo = 0, po = 0;
    int n;
    if (type == QK_PKT_1RTT) {
        n = qk_pkt_encode_short(out, cap, dcid->b, dcid->len, false, key_phase, pn, INJECT_PN_LEN,
                                &po);
    } else {
        qk_long_hdr_params hp = {.type = type,
                                 .version = version,
                                 .dcid = dcid->b,
                                 .dcid_len = dcid->len,
                                 .scid = scid->b,
                                 .scid_len = scid->len,
                                 .pn = pn,
                                 .pn_len = INJECT_PN_LEN};
        n = qk_pkt_encode_long(out, cap, &hp, &lo, &po);
    }
    if (n < 0) return n;
    size_t hdr = (size_t)n;
    size_t plen = len;
    if (pad_to && hdr + plen + QK_AEAD_TAG_BYTES < pad_to) plen = pad_to - hdr - QK_AEAD_TAG_BYTES;
    if (hdr + plen + QK_AEAD_TAG_BYTES > cap) return QK_ERR_BUFFER_TOO_SMALL;
    if (len) memcpy(out + hdr, frames, len);
    memset(out + hdr + len, 0, plen - len); /* PADDING frames */
    if (type != QK_PKT_1RTT) {
        int rc = qk_pkt_patch_length(out, lo, INJECT_PN_LEN + plen + QK_AEAD_TAG_BYTES);
        if (rc) return rc;
    }
    out[0] |= set_bits;
    int rc = qk_pkt_seal(k, pn, out, hdr, out + hdr, plen);
    if (rc < 0) return rc;
    size_t total = hdr + plen + QK_AEAD_TAG_BYTES;
    rc = qk_hp_protect(k, out, total, po);
    return rc < 0 ? rc : (int)total;
}

int qk_inject_seal(qk_conn *from, qk_pkt_type type, const uint8_t *frames, size_t len,
                   uint8_t set_bits, qk_time now, uint8_t *out, size_t cap)
{
    if (!from) return QK_ERR_STATE;
    if (type != QK_PKT_INITIAL && type != QK_PKT_HANDSHAKE && type != QK_PKT_1RTT)
        return QK_ERR_INVALID_ARG;
    qk_pn_space space = qk_space_of_pkt(type);
    qk_space *sp = &from->sp[space];
    if (!sp->has_tx || sp->discarded) return QK_ERR_STATE;
    uint64_t pn = sp->next_pn;
    int n =
        seal_with(&sp->tx, type, from->version, &qk_conn_dcid(from)->cid, &from->cids.lcid[0].cid,
                  from->key_phase, pn, frames, len, 0, set_bits, out, cap);
    if (n < 0) return n;
    sp->next_pn++;
    /* Record it as sent so that the peer's ACK of it is legitimate (RFC 9000 §13.1). */
    qk_sent_packet sent = {.pn = pn, .time_sent = now, .size_bytes = (uint32_t)n};
    qk_recovery_on_packet_sent(&from->rec, space, &sent, NULL, 0, now);
    return n;
}

int qk_pair_inject(qk_pair *p, bool from_client, qk_pkt_type type, const uint8_t *frames,
                   size_t len, uint8_t set_bits)
{
    static uint8_t buf[2048];
    qk_conn *from = from_client ? p->cconn : p->sconn;
    int n = qk_inject_seal(from, type, frames, len, set_bits, p->now, buf, sizeof buf);
    if (n < 0) return n;
    qk_datagram d = {.data = buf, .len = (size_t)n};
    d.peer = from_client ? p->caddr : p->saddr;
    d.local = from_client ? p->saddr : p->caddr;
    qk_endpoint_recv(from_client ? p->server : p->client, &d, p->now);
    qk_pair_flush(p);
    return 0;
}

int qk_inject_client_initial(uint8_t *out, size_t cap, const uint8_t *dcid, size_t dcid_len,
                             const uint8_t *scid, size_t scid_len, uint64_t pn,
                             const uint8_t *frames, size_t len, size_t pad_to)
{
    if (dcid_len > QK_MAX_CID_LEN || scid_len > QK_MAX_CID_LEN) return QK_ERR_INVALID_ARG;
    qk_cid d = {.len = (uint8_t)dcid_len}, s = {.len = (uint8_t)scid_len};
    memcpy(d.b, dcid, dcid_len);
    memcpy(s.b, scid, scid_len);
    uint8_t cs[QK_INITIAL_SECRET_BYTES], ss[QK_INITIAL_SECRET_BYTES];
    int rc = qk_crypto_initial_secrets(QK_VERSION_1, dcid, dcid_len, cs, ss);
    if (rc) return rc;
    qk_pkt_keys k;
    memset(&k, 0, sizeof k);
    rc = qk_pkt_keys_init(&k, QK_SUITE_AES_128_GCM, cs, sizeof cs);
    if (rc == 0)
        rc = seal_with(&k, QK_PKT_INITIAL, QK_VERSION_1, &d, &s, false, pn, frames, len, pad_to, 0,
                       out, cap);
    qk_pkt_keys_free(&k);
    return rc;
}

int qk_pair_restart(qk_pair *p)
{
    qk_endpoint_del(p->client);
    qk_endpoint_del(p->server);
    p->client = p->server = NULL;
    p->cconn = p->sconn = NULL;
    p->now = 1 * QK_NS_PER_S;
    p->rng_c = 1;
    p->rng_s = 2;
    p->nq = 0;
    p->ncev = p->nsev = 0;
    memset(p->sent_idx, 0, sizeof p->sent_idx);
    memset(p->bytes, 0, sizeof p->bytes);
    memset(p->busy_until, 0, sizeof p->busy_until);
    return qk_pair_start(p);
}

int qk_inject_client_initial_token(uint8_t *out, size_t cap, uint32_t version, const uint8_t *dcid,
                                   size_t dcid_len, const uint8_t *scid, size_t scid_len,
                                   const uint8_t *token, size_t token_len, const uint8_t *frames,
                                   size_t len, size_t pad_to)
{
    uint8_t cs[QK_INITIAL_SECRET_BYTES], ss[QK_INITIAL_SECRET_BYTES];
    int rc = qk_crypto_initial_secrets(version, dcid, dcid_len, cs, ss);
    if (rc) return rc;
    qk_pkt_keys k;
    memset(&k, 0, sizeof k);
    rc =
        qk_pkt_keys_init_ex(&k, version, QK_SUITE_AES_128_GCM, QK_AEAD_BACKEND_AUTO, cs, sizeof cs);
    if (rc) return rc;
    qk_long_hdr_params hp = {.type = QK_PKT_INITIAL,
                             .version = version,
                             .dcid = dcid,
                             .dcid_len = dcid_len,
                             .scid = scid,
                             .scid_len = scid_len,
                             .token = token,
                             .token_len = token_len,
                             .pn = 0,
                             .pn_len = INJECT_PN_LEN};
    size_t lo = 0, po = 0;
    int n = qk_pkt_encode_long(out, cap, &hp, &lo, &po);
    if (n < 0) goto done;
    size_t hdr = (size_t)n, plen = len;
    if (pad_to && hdr + plen + QK_AEAD_TAG_BYTES < pad_to) plen = pad_to - hdr - QK_AEAD_TAG_BYTES;
    n = QK_ERR_BUFFER_TOO_SMALL;
    if (hdr + plen + QK_AEAD_TAG_BYTES > cap) goto done;
    if (len) memcpy(out + hdr, frames, len);
    memset(out + hdr + len, 0, plen - len);
    qk_pkt_patch_length(out, lo, INJECT_PN_LEN + plen + QK_AEAD_TAG_BYTES);
    n = qk_pkt_seal(&k, 0, out, hdr, out + hdr, plen);
    if (n < 0) goto done;
    n = qk_hp_protect(&k, out, hdr + plen + QK_AEAD_TAG_BYTES, po);
    if (n == 0) n = (int)(hdr + plen + QK_AEAD_TAG_BYTES);
done:
    qk_pkt_keys_free(&k);
    return n;
}
