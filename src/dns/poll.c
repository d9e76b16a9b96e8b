/* SPDX-License-Identifier: MIT */
/* The DNS carrier's poll policy (see quack/dns.h). */
#include <quack/dns.h>

#include <stdlib.h>
#include <string.h>

#include "base/abi.h"

/* After an answer with data, the idle timer polls every LINGER_GAP_NS
 * until the first idle delay (cfg.idle_ns) has passed: the server may still
 * have data it cannot send yet (a retransmission, RFC 9002 §6.1.2 declares
 * a loss 9/8 of an RTT after the packet went out; or a PTO, §6.2), and
 * without a query held there it waits for the next one. The polls' answers
 * come back empty and earn no more (the window still shrinks); once the
 * window had drained, the old policy's next poll came idle_ns (500 ms)
 * later: bench/dns_loss.sh, 2 % loss, a retransmission waited 435 ms for a
 * query at the end of a 6.2 s download. 50 ms is under two of the server's
 * patience (QK_DNS_PATIENCE_NS): ten polls a lull at most. */
#define LINGER_GAP_NS (50 * QK_NS_PER_MS)

/* A query carrying data after a lull (no answer with data for the first
 * idle delay) takes polls along up to this many queries: the answer is
 * likely a flight of data, and the server's initial window is 10
 * datagrams (RFC 9002 §7.2), one query each. The window was one or two
 * queries after a lull and grew 1.5x a round trip (two polls per data
 * answer, one replaced by an ACK): through unbound at 100 ms each way the
 * server sent 3 datagrams a round trip for the first two round trips of a
 * download. */
#define START_QUERIES 10u

struct qk_dns_poll {
    qk_dns_poll_config cfg; /* the settings, defaults filled in */
    unsigned owed;          /* polls to send now */
    qk_time idle_delay;     /* current idle delay */
    qk_time idle_at;        /* next idle poll */
    qk_time linger_until;   /* idle polls LINGER_GAP_NS apart until then */
    qk_time start_until;    /* no START_QUERIES top-up before then */
    qk_dns_poll_stats st;   /* counters */
};

/* qk_dns_poll_config crosses the boundary at the caller's sizeof
 * (base/abi.h): the first release's ends with idle_max_ns. */
#define POLL_CONFIG_V1_BYTES QK_ABI_END(qk_dns_poll_config, idle_max_ns)
QK_ABI_LAST_FIELD(qk_dns_poll_config, idle_max_ns);

static void config_default(qk_dns_poll_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->polls_per_response = 2; /* measured best through unbound: docs/experiments/dns.md */
    cfg->ack_as_poll = true;
    cfg->burst_cap = QK_DNS_POLL_BURST_CAP;
    cfg->idle_ns = QK_DNS_POLL_IDLE_NS;
    cfg->idle_max_ns = QK_DNS_POLL_IDLE_MAX;
}

void qk_dns_poll_config_default_sized(qk_dns_poll_config *cfg, size_t cfg_bytes)
{
    qk_dns_poll_config d;
    config_default(&d);
    qk_abi_copy_out(cfg, cfg_bytes, &d, sizeof d);
}

int qk_dns_poll_new_sized(const qk_dns_poll_config *cfg, size_t cfg_bytes, qk_time now,
                          qk_dns_poll **out)
{
    if (!cfg || !out) return QK_ERR_INVALID_ARG;
    *out = NULL;
    qk_dns_poll_config c = {0};
    int rc = qk_abi_copy_in(&c, sizeof c, cfg, cfg_bytes, POLL_CONFIG_V1_BYTES);
    if (rc) return rc;
    qk_dns_poll *p = calloc(1, sizeof *p);
    if (!p) return QK_ERR_NOMEM;
    p->cfg = c;
    if (!p->cfg.burst_cap) p->cfg.burst_cap = QK_DNS_POLL_BURST_CAP;
    if (!p->cfg.idle_ns) p->cfg.idle_ns = QK_DNS_POLL_IDLE_NS;
    if (!p->cfg.idle_max_ns) p->cfg.idle_max_ns = QK_DNS_POLL_IDLE_MAX;
    if (p->cfg.idle_max_ns < p->cfg.idle_ns) p->cfg.idle_max_ns = p->cfg.idle_ns;
    p->idle_delay = p->cfg.idle_ns;
    p->idle_at = now + p->idle_delay;
    *out = p;
    return 0;
}

void qk_dns_poll_del(qk_dns_poll *p)
{
    free(p);
}

void qk_dns_poll_get_stats_sized(const qk_dns_poll *p, qk_dns_poll_stats *out, size_t out_bytes)
{
    qk_dns_poll_stats s = p->st;
    s.owed_now = p->owed;
    s.idle_delay_ns = p->idle_delay;
    qk_abi_copy_out(out, out_bytes, &s, sizeof s);
}

/* The next idle poll after one at now (or activity at now). */
static qk_time next_idle(const qk_dns_poll *p, qk_time now)
{
    if (now >= p->linger_until) return now + p->idle_delay;
    return now + LINGER_GAP_NS < p->linger_until ? now + LINGER_GAP_NS : p->linger_until;
}

static void activity(qk_dns_poll *p, qk_time now)
{
    p->idle_delay = p->cfg.idle_ns; /* reset the back-off */
    p->idle_at = next_idle(p, now);
}

void qk_dns_poll_on_response(qk_dns_poll *p, bool data, qk_time now)
{
    if (!data) {
        p->st.responses_empty++; /* no new poll: the window shrinks */
        return;
    }
    p->st.responses_data++;
    p->linger_until = now + p->cfg.idle_ns;
    for (unsigned i = 0; i < p->cfg.polls_per_response; i++) {
        if (p->owed < p->cfg.burst_cap)
            p->owed++;
        else
            p->st.capped++;
    }
    activity(p, now);
}

void qk_dns_poll_on_data_sent(qk_dns_poll *p, qk_time now)
{
    if (p->cfg.ack_as_poll && p->owed) {
        p->owed--;
        p->st.acks_as_polls++;
    }
    if (p->cfg.polls_per_response && now >= p->linger_until && now >= p->start_until) {
        /* after a lull, once */
        unsigned want = START_QUERIES - 1 < p->cfg.burst_cap ? START_QUERIES - 1 : p->cfg.burst_cap;
        if (p->owed < want) p->owed = want;
        p->start_until = now + p->cfg.idle_ns;
    }
    activity(p, now); /* data going up is activity: restart the back-off */
}

bool qk_dns_poll_take(qk_dns_poll *p, qk_time now)
{
    if (p->owed) {
        p->owed--;
        p->st.polls_sent++;
        p->idle_at = next_idle(p, now);
        return true;
    }
    if (now < p->idle_at) return false;
    p->st.polls_sent++;
    p->st.idle_polls++;
    if (now < p->linger_until) { /* lingering: no back-off yet */
        p->idle_at = next_idle(p, now);
        return true;
    }
    p->idle_delay *= 2; /* back off while nothing happens */
    if (p->idle_delay > p->cfg.idle_max_ns) p->idle_delay = p->cfg.idle_max_ns;
    p->idle_at = now + p->idle_delay;
    return true;
}

qk_time qk_dns_poll_next_timeout(const qk_dns_poll *p, qk_time now)
{
    return p->owed ? now : p->idle_at;
}
