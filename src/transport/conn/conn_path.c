/* SPDX-License-Identifier: MIT */
/* The connection's paths (RFC 9000 §8.2, §9): which path a datagram came
 * on, NAT rebinding and peer migration on the server (validate, 3x budget,
 * fall back), client-initiated migration (probe on a spare connection ID,
 * switch on the response), and what a new path resets (§9.4). The
 * per-path state machine is path.c; the probing datagram is built in
 * conn_send.c. */
#include "transport/conn/conn.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

/* Our address as a datagram names it: unspecified (no socket told us)
 * matches anything. */
static bool local_match(const qk_addr *a, const qk_addr *b)
{
    return a->len == 0 || b->len == 0 || qk_addr_equal(a, b);
}

/* The same hosts at both ends (a NAT rebinding changes only ports). */
static bool same_hosts(const qk_path *a, const qk_path *b)
{
    return qk_addr_same_host(&a->peer, &b->peer) && qk_addr_same_host(&a->local, &b->local);
}

void qk_conn_path_rx_begin(qk_conn *c, const qk_datagram *d)
{
    memset(&c->paths.rx, 0, sizeof c->paths.rx);
    if (!c->is_server) {
        /* The client's peer moves only to its preferred address (RFC 9000
         * §9.6): that probe path is told by the server address a datagram
         * came from, our own probe path by the local address it reached. */
        bool alt = false;
        if (c->paths.alt_active)
            alt = qk_addr_equal(&c->paths.alt.peer, &c->paths.cur.peer)
                      ? qk_addr_equal(&d->local, &c->paths.alt.local)
                      : qk_addr_equal(&d->peer, &c->paths.alt.peer);
        c->paths.rx.which = alt ? QK_RXPATH_ALT : QK_RXPATH_CUR;
        return;
    }
    /* A path is both addresses: the client probing our preferred address
     * keeps its own (RFC 9000 §9.6.3). */
    if (qk_addr_equal(&d->peer, &c->paths.cur.peer) && local_match(&d->local, &c->paths.cur.local))
        c->paths.rx.which = QK_RXPATH_CUR;
    else if (c->paths.alt_active && qk_addr_equal(&d->peer, &c->paths.alt.peer) &&
             local_match(&d->local, &c->paths.alt.local))
        c->paths.rx.which = QK_RXPATH_ALT;
    else
        c->paths.rx.which = QK_RXPATH_NEW;
}

void qk_conn_path_on_challenge(qk_conn *c, const uint8_t data[8])
{
    /* RFC 9000 §8.2.2: the response goes out on the path the challenge came in on. */
    qk_path *p = c->paths.rx.which == QK_RXPATH_CUR   ? &c->paths.cur
                 : c->paths.rx.which == QK_RXPATH_ALT ? &c->paths.alt
                                                      : NULL;
    if (!p) {
        memcpy(c->paths.rx.challenge, data, 8);
        c->paths.rx.has_challenge = true;
        return;
    }
    memcpy(p->response, data, 8);
    p->response_due = true;
}

void qk_conn_path_reset_state(qk_conn *c, qk_time now)
{
    /* RFC 9000 §9.4: the congestion controller and RTT estimate start over. */
    qk_rtt_reset(&c->rtt);
    if (c->cc.ops && c->cc.ops->reset) c->cc.ops->reset(&c->cc, now);
    /* RFC 9000 §14.3: the new path's MTU is unknown: back to the base. */
    qk_pmtud_reset(&c->pmtud, now);
    qk_conn_set_mtu(c, QK_PMTUD_BASE_BYTES);
    /* RFC 9000 §13.4.2: ECN is validated again on the new path. */
    qk_recovery_ecn_restart(&c->rec);
}

static void new_challenge(qk_conn *c, qk_path *p, qk_time now)
{
    uint8_t data[8];
    qk_conn_env_random(c, data, sizeof data);
    qk_path_start_validation(p, data, qk_conn_pto_ns(c), now);
}

/* RFC 9000 §9.5: send with connection ID slot idx from now on and retire
 * the one used so far (§5.1.2), so no CID is seen on two addresses. */
static void switch_dcid(qk_conn *c, size_t idx)
{
    size_t old = c->cids.rcid_cur;
    if (idx == old) return;
    c->cids.rcid_cur = idx;
    bool queued = false;
    for (size_t i = 0; i < c->cids.n_retiring; i++)
        queued |= c->cids.retiring[i].seq == c->cids.rcid[old].seq;
    if (!queued && c->cids.n_retiring < QK_CONN_MAX_RETIRING) {
        c->cids.retiring[c->cids.n_retiring++] = (qk_retiring_cid){.seq = c->cids.rcid[old].seq};
        c->cids.rcid[old].active = false;
    }
}

/* A peer connection ID other than the current one, or QK_CONN_MAX_REMOTE_CIDS. */
static size_t spare_dcid(const qk_conn *c)
{
    for (size_t i = 0; i < QK_CONN_MAX_REMOTE_CIDS; i++)
        if (i != c->cids.rcid_cur && c->cids.rcid[i].active) return i;
    return QK_CONN_MAX_REMOTE_CIDS;
}

/* RFC 9000 §5.1.2, §9.5: a connection ID that went toward an address we
 * will not use is retired, so it is never seen on a second path. */
static void retire_dcid(qk_conn *c, size_t idx)
{
    if (idx == c->cids.rcid_cur || !c->cids.rcid[idx].active) return;
    if (c->cids.n_retiring == QK_CONN_MAX_RETIRING) return;
    c->cids.retiring[c->cids.n_retiring++] = (qk_retiring_cid){.seq = c->cids.rcid[idx].seq};
    c->cids.rcid[idx].active = false;
}

static void use_path(qk_conn *c, const qk_path *p)
{
    c->paths.cur = *p;
    c->local = p->local;
    c->peer = p->peer;
}

/* Server: the peer's address changed (RFC 9000 §9.3): send there now, within
 * 3x of what it sent until validated; keep the old path to fall back to. */
static void peer_moved(qk_conn *c, const qk_path *to, qk_time now)
{
    bool port_only = same_hosts(to, &c->paths.cur);
    qk_path old = c->paths.cur;
    old.response_due = false;
    old.challenge_due = false;
    old.validating = false;
    use_path(c, to);
    c->paths.alt = old;
    c->paths.alt_active = old.validated && !c->paths.cur.validated;
    /* RFC 9000 §9.5: toward the new address with a connection ID never used
     * on the old one, when the peer gave us a spare (else the same: MAY). */
    size_t spare = spare_dcid(c);
    if (spare < QK_CONN_MAX_REMOTE_CIDS) {
        switch_dcid(c, spare);
        c->stats.dcid_changes++;
    }
    c->paths.cur.dcid_idx = c->cids.rcid_cur;
    if (!c->paths.cur.validated) new_challenge(c, &c->paths.cur, now);
    /* RFC 9000 §9.4: only a port change (NAT rebinding) keeps the path state. */
    if (!port_only) qk_conn_path_reset_state(c, now);
    c->stats.migrations++;
    qk_qlog_event(c, "quack:connection_migrated",
                  port_only ? "{\"kind\":\"rebinding\"}" : "{\"kind\":\"migration\"}", now);
}

void qk_conn_path_rx_end(qk_conn *c, const qk_datagram *d, qk_time now)
{
    if (c->state != QK_CONN_ESTABLISHED) return;
    if (c->pref.pending) qk_conn_prefaddr_maybe_probe(c, now); /* RFC 9000 §9.6.1 */
    switch (c->paths.rx.which) {
    case QK_RXPATH_CUR:
        if (!c->paths.cur.validated) c->paths.cur.rx_bytes += d->len;
        return;
    case QK_RXPATH_ALT:
        if (!c->paths.alt.validated) c->paths.alt.rx_bytes += d->len;
        /* RFC 9000 §9.3: non-probing frames with the largest pn move the path. */
        if (c->is_server && c->paths.rx.migrate && c->handshake_confirmed) {
            qk_path to = c->paths.alt;
            /* RFC 9000 §9.3.3: validate before trusting it, unless only our
             * address changed (the client moved to our preferred address,
             * §9.6.3: its own address is the one already validated). */
            to.validated = c->paths.cur.validated && qk_addr_equal(&to.peer, &c->paths.cur.peer);
            to.rx_bytes = d->len;
            to.tx_bytes = 0;
            peer_moved(c, &to, now);
        }
        return;
    default: break;
    }
    /* A datagram from an address we have not seen (server only). */
    if (!c->handshake_confirmed || (!c->paths.rx.migrate && !c->paths.rx.has_challenge)) return;
    qk_path np;
    qk_path_init(&np, &d->local, &d->peer,
                 c->paths.cur.validated && qk_addr_equal(&d->peer, &c->paths.cur.peer));
    np.rx_bytes = d->len;
    np.dcid_idx = c->cids.rcid_cur;
    if (c->paths.rx.has_challenge) {
        memcpy(np.response, c->paths.rx.challenge, 8);
        np.response_due = true;
    }
    if (c->paths.rx.migrate) {
        peer_moved(c, &np, now);
    } else {
        /* RFC 9000 §9.1: a probe from a new address: answer it there, stay. */
        c->paths.alt = np;
        c->paths.alt_active = true;
    }
}

static void client_switch(qk_conn *c, qk_time now)
{
    /* RFC 9000 §9.2, §9.5: move to the probed path and its connection ID,
     * retire the old one. */
    bool port_only = same_hosts(&c->paths.alt, &c->paths.cur);
    bool hop = c->paths.alt_hop;
    bool preferred = !hop && !qk_addr_equal(&c->paths.alt.peer, &c->paths.cur.peer); /* §9.6.2 */
    if (c->paths.alt.dcid_idx != c->cids.rcid_cur) {
        switch_dcid(c, c->paths.alt.dcid_idx);
        c->stats.dcid_changes++;
    }
    use_path(c, &c->paths.alt);
    c->paths.cur.dcid_idx = c->cids.rcid_cur;
    c->paths.alt_active = false;
    c->paths.alt_hop = false;
    if (!port_only) qk_conn_path_reset_state(c, now);
    c->stats.migrations++;
    /* RFC 9000 §9.3: the server moves on our first non-probing packet
     * there: send one now rather than with the next ACK (max_ack_delay). */
    if (hop) c->pend |= QK_PEND_PING;
    qk_qlog_event(c, "quack:connection_migrated",
                  preferred ? "{\"kind\":\"preferred_address\"}"
                  : hop     ? "{\"kind\":\"port_hop\"}"
                            : "{\"kind\":\"active\"}",
                  now);
    if (preferred) qk_conn_prefaddr_done(c, true, now);
}

void qk_conn_path_on_response(qk_conn *c, const uint8_t data[8], qk_time now)
{
    /* RFC 9000 §8.2.3: a response validates the path its challenge went on,
     * whichever path it arrives on. */
    if (qk_path_on_response(&c->paths.cur, data)) {
        c->stats.path_validations++;
        c->paths.alt_active = false; /* the old path is no longer needed */
        return;
    }
    if (c->paths.alt_active && qk_path_on_response(&c->paths.alt, data)) {
        c->stats.path_validations++;
        if (!c->is_server) client_switch(c, now);
    }
}

qk_time qk_conn_path_next_timeout(const qk_conn *c)
{
    qk_time t = qk_path_next_timeout(&c->paths.cur);
    if (c->paths.alt_active) {
        qk_time a = qk_path_next_timeout(&c->paths.alt);
        if (a < t) t = a;
    }
    return t;
}

void qk_conn_path_on_timeout(qk_conn *c, qk_time now)
{
    if (qk_path_on_timeout(&c->paths.cur, now)) {
        /* RFC 9000 §9.3.2: validation failed: back to the last validated path. */
        if (c->paths.alt_active && c->paths.alt.validated) {
            qk_path back = c->paths.alt;
            use_path(c, &back);
            c->paths.cur.dcid_idx =
                c->cids.rcid_cur; /* the old CID may be retired: keep the new one */
            c->paths.alt_active = false;
        }
        qk_qlog_event(c, "quack:path_validation_failed", "{}", now);
    }
    if (c->paths.alt_active && qk_path_on_timeout(&c->paths.alt, now)) {
        c->paths.alt_active = false; /* a failed probe: stay where we are */
        qk_qlog_event(c, "quack:path_validation_failed", "{}", now);
        /* RFC 9000 §9.6.1: a preferred address that does not validate is
         * not used; the connection stays on the original one. */
        if (!c->is_server && !c->paths.alt_hop &&
            !qk_addr_equal(&c->paths.alt.peer, &c->paths.cur.peer))
            qk_conn_prefaddr_done(c, false, now);
        if (c->paths.alt_hop) retire_dcid(c, c->paths.alt.dcid_idx);
        c->paths.alt_hop = false;
    }
}

int qk_conn_migrate(qk_conn *c, const qk_addr *new_local, qk_time now)
{
    if (!c || !new_local) return QK_ERR_INVALID_ARG;
    qk_conn_env_wake(c);
    /* RFC 9000 §9: clients migrate, after the handshake is confirmed, unless
     * the server sent disable_active_migration (§18.2). */
    if (c->is_server || c->state != QK_CONN_ESTABLISHED || !c->handshake_confirmed)
        return QK_ERR_STATE;
    if (c->peer_tp.disable_active_migration) return QK_ERR_UNSUPPORTED; /* for good */
    if (c->paths.alt_active) return QK_ERR_STATE; /* one migration at a time */
    /* RFC 9000 §9.5: a new path needs a connection ID not used on another. */
    size_t spare = spare_dcid(c);
    if (spare == QK_CONN_MAX_REMOTE_CIDS) return QK_ERR_LIMIT;
    qk_path_init(&c->paths.alt, new_local, &c->peer, false);
    c->paths.alt.dcid_idx = spare;
    c->paths.alt_active = true;
    c->paths.alt_hop = false;
    new_challenge(c, &c->paths.alt, now);
    return 0;
}

int qk_conn_hop(qk_conn *c, uint16_t peer_port, qk_time now)
{
    if (!c || !peer_port) return QK_ERR_INVALID_ARG;
    qk_conn_env_wake(c);
    /* A departure from RFC 9000 §9 (a client never moves to another server
     * address except the preferred one, §9.6): the server's other port is
     * probed and validated like a migration (§8.2, §9.1), and the peer's
     * disable_active_migration (§18.2) refuses it all the same. */
    if (c->is_server || c->state != QK_CONN_ESTABLISHED || !c->handshake_confirmed)
        return QK_ERR_STATE;
    if (c->peer_tp.disable_active_migration) return QK_ERR_UNSUPPORTED;
    if (c->paths.alt_active && !c->paths.alt_hop) return QK_ERR_STATE; /* a migration */
    qk_addr peer = c->paths.cur.peer;
    if (qk_addr_port(&peer) == peer_port) return QK_ERR_INVALID_ARG;
    if (peer.ss.ss_family == AF_INET)
        ((struct sockaddr_in *)&peer.ss)->sin_port = htons(peer_port);
    else
        ((struct sockaddr_in6 *)&peer.ss)->sin6_port = htons(peer_port);
    /* A hop still probing is given up for the new one, its ID retired. */
    if (c->paths.alt_active) retire_dcid(c, c->paths.alt.dcid_idx);
    c->paths.alt_active = false;
    size_t spare = spare_dcid(c);
    if (spare == QK_CONN_MAX_REMOTE_CIDS) return QK_ERR_LIMIT; /* §9.5 */
    qk_path_init(&c->paths.alt, &c->paths.cur.local, &peer, false);
    c->paths.alt.dcid_idx = spare;
    c->paths.alt_active = true;
    c->paths.alt_hop = true;
    new_challenge(c, &c->paths.alt, now);
    return 0;
}

void qk_conn_path_addrs(const qk_conn *c, qk_addr *local, qk_addr *peer)
{
    if (local) *local = c->paths.cur.local;
    if (peer) *peer = c->paths.cur.peer;
}
