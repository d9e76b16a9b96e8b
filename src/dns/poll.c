/* SPDX-License-Identifier: MIT */
/* The DNS carrier's poll policy (see quack/dns.h). */
#include <quack/dns.h>

#include <string.h>

void qk_dns_poll_config_default(qk_dns_poll_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->polls_per_response = 2; /* measured best through unbound: docs/experiments/dns.md */
    cfg->ack_as_poll = true;
    cfg->burst_cap = QK_DNS_POLL_BURST_CAP;
    cfg->idle_ns = QK_DNS_POLL_IDLE_NS;
    cfg->idle_max_ns = QK_DNS_POLL_IDLE_MAX;
}

void qk_dns_poll_init(qk_dns_poll *p, const qk_dns_poll_config *cfg, qk_time now)
{
    memset(p, 0, sizeof *p);
    p->cfg = *cfg;
    if (!p->cfg.burst_cap) p->cfg.burst_cap = QK_DNS_POLL_BURST_CAP;
    if (!p->cfg.idle_ns) p->cfg.idle_ns = QK_DNS_POLL_IDLE_NS;
    if (!p->cfg.idle_max_ns) p->cfg.idle_max_ns = QK_DNS_POLL_IDLE_MAX;
    if (p->cfg.idle_max_ns < p->cfg.idle_ns) p->cfg.idle_max_ns = p->cfg.idle_ns;
    p->idle_delay = p->cfg.idle_ns;
    p->idle_at = now + p->idle_delay;
}

static void activity(qk_dns_poll *p, qk_time now)
{
    p->idle_delay = p->cfg.idle_ns; /* reset the back-off */
    p->idle_at = now + p->idle_delay;
}

void qk_dns_poll_on_response(qk_dns_poll *p, bool data, qk_time now)
{
    if (!data) {
        p->st.responses_empty++; /* no new poll: the window shrinks */
        return;
    }
    p->st.responses_data++;
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
    activity(p, now); /* data going up is activity: restart the back-off */
}

bool qk_dns_poll_take(qk_dns_poll *p, qk_time now)
{
    if (p->owed) {
        p->owed--;
        p->st.polls_sent++;
        p->idle_at = now + p->idle_delay;
        return true;
    }
    if (now < p->idle_at) return false;
    p->st.polls_sent++;
    p->st.idle_polls++;
    p->idle_delay *= 2; /* back off while nothing happens */
    if (p->idle_delay > p->cfg.idle_max_ns) p->idle_delay = p->cfg.idle_max_ns;
    p->idle_at = now + p->idle_delay;
    return true;
}

qk_time qk_dns_poll_next_timeout(const qk_dns_poll *p, qk_time now)
{
    return p->owed ? now : p->idle_at;
}
