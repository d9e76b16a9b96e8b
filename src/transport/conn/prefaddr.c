/* SPDX-License-Identifier: MIT */
/* preferred_address (RFC 9000 §9.6, §18.2): the server advertises another
 * address of its own with a connection ID of sequence number 1 (§5.1.1);
 * the client takes that ID like one from NEW_CONNECTION_ID, probes the
 * address of its family once the handshake is confirmed, and moves there
 * when the path validates (the move itself is conn_path.c's client
 * migration; a failed probe leaves the connection where it was). */
#include "transport/conn/conn.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

/* An IPv4 address (AF_INET, or v4-mapped AF_INET6): its bytes and port. */
static bool addr_v4(const qk_addr *a, uint8_t ip[4], uint16_t *port)
{
    qk_addr v4;
    if (!qk_addr_unmap_v4(a, &v4)) return false;
    memcpy(ip, &((const struct sockaddr_in *)&v4.ss)->sin_addr, 4);
    *port = qk_addr_port(&v4);
    return true;
}

/* An IPv6 address that is not v4-mapped: its bytes and port. */
static bool addr_v6(const qk_addr *a, uint8_t ip[16], uint16_t *port)
{
    const struct sockaddr_in6 *s6 = (const void *)&a->ss;
    if (a->len == 0 || a->ss.ss_family != AF_INET6 || IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr))
        return false;
    memcpy(ip, &s6->sin6_addr, 16);
    *port = ntohs(s6->sin6_port);
    return true;
}

bool qk_conn_prefaddr_config_ok(const qk_config *cfg)
{
    uint8_t ip[16];
    uint16_t port = 0;
    if (cfg->preferred_addr_v4.len && (!addr_v4(&cfg->preferred_addr_v4, ip, &port) || !port))
        return false;
    if (cfg->preferred_addr_v6.len && (!addr_v6(&cfg->preferred_addr_v6, ip, &port) || !port))
        return false;
    return true;
}

void qk_conn_prefaddr_advertise(qk_conn *c, qk_tparams *tp)
{
    const qk_config *cfg = c->cfg;
    /* RFC 9000 §18.2: a server using zero-length connection IDs must not
     * send a preferred address; only servers send one. */
    if (!c->is_server || c->cids.lcid[0].cid.len == 0) return;
    qk_preferred_address *pa = &tp->preferred_address;
    memset(pa, 0, sizeof *pa); /* §18.2: a family left out is all zeros */
    bool v4 = addr_v4(&cfg->preferred_addr_v4, pa->ipv4, &pa->ipv4_port);
    bool v6 = addr_v6(&cfg->preferred_addr_v6, pa->ipv6, &pa->ipv6_port);
    if ((!v4 && !v6) || c->cids.lcid_next_seq != 1 || c->cids.lcid[1].active) return;
    /* §5.1.1: the connection ID in preferred_address has sequence number 1;
     * it counts toward the client's active_connection_id_limit (§18.2). */
    qk_local_cid *l = &c->cids.lcid[1];
    int rc = QK_ERR_STATE;
    for (int tries = 0; tries < 4 && rc; tries++) { /* collisions are astronomically rare */
        l->cid.len = c->cids.lcid[0].cid.len;
        qk_conn_env_random(c, l->cid.b, l->cid.len);
        qk_cid_encode_server_id(cfg, &l->cid); /* routed like every other CID of ours */
        rc = qk_conn_env_add_cid(c, &l->cid);
    }
    if (rc) {
        memset(l, 0, sizeof *l);
        return;
    }
    qk_conn_env_reset_token(c, &l->cid, l->reset_token); /* §10.3: like every other CID */
    l->seq = c->cids.lcid_next_seq++;
    l->active = true;
    l->send_pending = false; /* it travels in the transport parameter */
    pa->cid.len = l->cid.len;
    memcpy(pa->cid.id, l->cid.b, l->cid.len);
    memcpy(pa->reset_token, l->reset_token, QK_RESET_TOKEN_LEN);
    tp->present |= QK_TPB_PREFERRED_ADDRESS;
}

/* RFC 9000 §9.6.1: the address of the family we talk to the server in
 * (a v4-mapped peer takes the IPv4 one, mapped). False when the server gave
 * none for it (§18.2: all zeros) or it is where we already are. */
static bool pick_address(const qk_conn *c, const qk_preferred_address *pa, qk_addr *out)
{
    const qk_addr *cur = &c->paths.cur.peer;
    uint8_t ip[16];
    uint16_t port;
    memset(out, 0, sizeof *out);
    if (addr_v4(cur, ip, &port) && pa->ipv4_port) {
        struct sockaddr_in *s = (struct sockaddr_in *)&out->ss;
        s->sin_family = AF_INET;
        memcpy(&s->sin_addr, pa->ipv4, 4);
        s->sin_port = htons(pa->ipv4_port);
        out->len = sizeof *s;
        if (cur->ss.ss_family == AF_INET6) qk_addr_map_v4(out, out);
    } else if (addr_v6(cur, ip, &port) && pa->ipv6_port) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&out->ss;
        s6->sin6_family = AF_INET6;
        memcpy(&s6->sin6_addr, pa->ipv6, 16);
        s6->sin6_port = htons(pa->ipv6_port);
        out->len = sizeof *s6;
    }
    return out->len && !qk_addr_equal(out, cur);
}

int qk_conn_prefaddr_on_tparams(qk_conn *c)
{
    const qk_tparams *tp = &c->peer_tp;
    if (c->is_server || !(tp->present & QK_TPB_PREFERRED_ADDRESS)) return 0;
    const qk_preferred_address *pa = &tp->preferred_address;
    /* RFC 9000 §18.2: never from a server using zero-length connection IDs,
     * and the connection ID in it is never empty. */
    if (c->cids.peer_scid.len == 0 || pa->cid.len == 0) return QK_ERR_TRANSPORT_PARAMETER;
    /* §5.1.1: sequence number 1, usable like any connection ID the server
     * issues (its reset token is registered the same way, §10.3.1). */
    qk_frame_new_cid f = {.seq = 1,
                          .retire_prior_to = 0,
                          .cid = pa->cid.id,
                          .cid_len = pa->cid.len,
                          .reset_token = pa->reset_token};
    int rc = qk_cid_on_new(c, &f);
    if (rc) return rc == QK_ERR_PROTOCOL_VIOLATION ? QK_ERR_TRANSPORT_PARAMETER : rc;
    if (c->cfg->disable_preferred_address || !pick_address(c, pa, &c->pref.addr)) return 0;
    c->pref.pending = true;
    c->stats.preferred_address = QK_PREFADDR_OFFERED;
    return 0;
}

/* "1.2.3.4:443" / "[::1]:443" for qlog. */
static void format_addr(const qk_addr *a, char *buf, size_t cap)
{
    char ip[INET6_ADDRSTRLEN] = "?";
    uint8_t b[16];
    uint16_t port = 0;
    if (addr_v4(a, b, &port)) {
        inet_ntop(AF_INET, b, ip, sizeof ip);
        snprintf(buf, cap, "%s:%u", ip, (unsigned)port);
    } else {
        if (addr_v6(a, b, &port)) inet_ntop(AF_INET6, b, ip, sizeof ip);
        snprintf(buf, cap, "[%s]:%u", ip, (unsigned)port);
    }
}

static void qlog_status(qk_conn *c, const char *status, qk_time now)
{
    char addr[INET6_ADDRSTRLEN + 16], json[160];
    format_addr(&c->pref.addr, addr, sizeof addr);
    snprintf(json, sizeof json, "{\"status\":\"%s\",\"address\":\"%s\"}", status, addr);
    qk_qlog_event(c, "quack:preferred_address", json, now);
}

/* The connection ID for the new path: sequence number 1 unless it is the
 * one in use (§9.5: never one ID on two paths), then any other spare. */
static size_t prefaddr_dcid(const qk_conn *c)
{
    size_t spare = QK_CONN_MAX_REMOTE_CIDS;
    for (size_t i = 0; i < QK_CONN_MAX_REMOTE_CIDS; i++) {
        if (i == c->cids.rcid_cur || !c->cids.rcid[i].active) continue;
        if (c->cids.rcid[i].seq == 1) return i;
        if (spare == QK_CONN_MAX_REMOTE_CIDS) spare = i;
    }
    return spare;
}

void qk_conn_prefaddr_maybe_probe(qk_conn *c, qk_time now)
{
    /* RFC 9000 §9.6.1: after the handshake is confirmed; one probe at a time. */
    if (!c->pref.pending || !c->handshake_confirmed || c->paths.alt_active) return;
    c->pref.pending = false;
    size_t idx = prefaddr_dcid(c);
    if (idx == QK_CONN_MAX_REMOTE_CIDS) {
        qk_conn_prefaddr_done(c, false, now); /* the server retired them all */
        return;
    }
    qk_path_init(&c->paths.alt, &c->paths.cur.local, &c->pref.addr, false);
    c->paths.alt.dcid_idx = idx;
    c->paths.alt_active = true;
    c->paths.alt_hop = false;
    uint8_t data[8];
    qk_conn_env_random(c, data, sizeof data);
    qk_path_start_validation(&c->paths.alt, data, qk_conn_pto_ns(c), now); /* §8.2.1 */
    c->stats.preferred_address = QK_PREFADDR_PROBING;
    qlog_status(c, "probing", now);
    qk_conn_env_wake(c);
}

void qk_conn_prefaddr_done(qk_conn *c, bool moved, qk_time now)
{
    c->stats.preferred_address = moved ? QK_PREFADDR_MOVED : QK_PREFADDR_FAILED;
    qlog_status(c, moved ? "moved" : "failed", now);
}
