/* SPDX-License-Identifier: MIT */
/* Simulator internals shared by sim.c, nodes.c and scenario.c. */
#ifndef QK_SIM_INT_H
#define QK_SIM_INT_H

#include <quack/sim.h>
#include "sim/hist.h"
#include "sim/link.h"

#define QK_SIM_NO_FLOW UINT32_MAX

/** Per-flow accounting from link hooks (packets carry their flow tag). */
typedef struct qk_sim_flow_acct {
    uint64_t drops, marks;
    qk_hist qdelay; /**< queue sojourn per link crossing */
} qk_sim_flow_acct;

/** Add a node with no address (timers such as the CSV sampler). */
/* The built-in flow types' factories (flow_cbr.c, flow_quic.c), listed in
 * scenario.c's const table of flow types. */
int qk_sim_cbr_factory(qk_sim *sim, const qk_sim_flow_args *args, void **flow,
                       const qk_sim_flow_ops **ops);
int qk_sim_quic_factory(qk_sim *sim, const qk_sim_flow_args *args, void **flow,
                        const qk_sim_flow_ops **ops);
int qk_sim_media_factory(qk_sim *sim, const qk_sim_flow_args *args, void **flow,
                         const qk_sim_flow_ops **ops);

int qk_sim_timer_add(qk_sim *sim, const qk_sim_node_ops *ops, void *ctx);

/**
 * Hand an allocation to the simulator: fn(p) runs at qk_sim_del (in reverse
 * order). On QK_ERR_NOMEM fn(p) runs at once.
 */
int qk_sim_own(qk_sim *sim, void *p, void (*fn)(void *));

/** Nodes created from now on carry this flow tag (QK_SIM_NO_FLOW = none). */
void qk_sim_set_current_flow(qk_sim *sim, uint32_t flow);

/** Accounting of a flow (NULL if never touched). */
const qk_sim_flow_acct *qk_sim_flow_acct_get(const qk_sim *sim, uint32_t flow);

/** Number of hosts, and a host's name. */
size_t qk_sim_host_count(const qk_sim *sim);
const char *qk_sim_host_name(const qk_sim *sim, int host);

/** Read-only access to a link's configuration. */
const qk_sim_link_cfg *qk_sim_link_cfg_get(const qk_sim *sim, int link);

/** IPv4 address (host order) and port of a qk_addr; returns 0 or QK_ERR_INVALID_ARG. */
int qk_sim_addr_ipv4(const qk_addr *a, uint32_t *ip, uint16_t *port);

#endif
