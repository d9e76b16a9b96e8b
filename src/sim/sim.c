/* SPDX-License-Identifier: MIT */
/* Simulator core: hosts, routes, nodes, links and the event heap. */
#include "sim/sim_int.h"

#include "base/abi.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

enum { ENT_NODE = 0, ENT_LINK = 1 };

typedef struct ent {
    qk_time t;
    uint64_t seq;
    int pos; /**< index in the heap, -1 when not scheduled */
    uint8_t kind;
    int idx;
} ent;

typedef struct route {
    uint32_t ip;
    int link;
} route;

typedef struct port_ent {
    uint16_t port;
    int node;
} port_ent;

typedef struct host {
    char name[32];
    uint32_t ip;
    route *routes;
    size_t n_routes;
    int default_link;
    port_ent *ports;
    size_t n_ports;
} host;

typedef struct node {
    int host; /**< -1 for timers */
    uint16_t port;
    qk_sim_node_ops ops;
    void *ctx;
    int ent;
    uint32_t flow;
} node;

typedef struct slink {
    char name[48];
    int from, to;
    int ent;
    qk_link l;
} slink;

struct qk_sim {
    uint64_t seed;
    qk_time now;
    uint64_t events, seq, noroute;
    qk_rng rng;
    qk_pkt_pool pool;
    host *hosts;
    size_t n_hosts;
    node *nodes;
    size_t n_nodes;
    slink **links;
    size_t n_links;
    ent *ents;
    size_t n_ents;
    int *heap;
    size_t n_heap;
    uint32_t cur_flow;
    qk_sim_flow_acct *flows;
    size_t n_flows;
    struct owned {
        void *p;
        void (*fn)(void *);
    } * owned;
    size_t n_owned;
};

/* Append a zeroed element to a doubling array; returns it or NULL (array intact). */
static void *push(void **arr, size_t *n, size_t elem)
{
    char *p = *arr;
    if (*n == 0 || (*n >= 4 && (*n & (*n - 1)) == 0)) {
        p = realloc(p, (*n ? *n * 2 : 4) * elem);
        if (!p) return NULL;
        *arr = p;
    }
    memset(p + *n * elem, 0, elem);
    return p + (*n)++ * elem;
}

#define PUSH(arr, n) push((void **)&(arr), &(n), sizeof *(arr))

qk_sim *qk_sim_new(uint64_t seed)
{
    qk_sim *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->seed = seed;
    s->cur_flow = QK_SIM_NO_FLOW;
    qk_rng_seed(&s->rng, seed, 0);
    qk_pkt_pool_init(&s->pool, 0);
    return s;
}

void qk_sim_del(qk_sim *s)
{
    if (!s) return;
    for (size_t i = s->n_owned; i-- > 0;) s->owned[i].fn(s->owned[i].p);
    free(s->owned);
    for (size_t i = 0; i < s->n_links; i++) {
        qk_link_free(&s->links[i]->l);
        free(s->links[i]);
    }
    for (size_t i = 0; i < s->n_hosts; i++) {
        free(s->hosts[i].routes);
        free(s->hosts[i].ports);
    }
    for (size_t i = 0; i < s->n_flows; i++) qk_hist_free(&s->flows[i].qdelay);
    qk_pkt_pool_free(&s->pool);
    free(s->flows);
    free(s->links);
    free(s->hosts);
    free(s->nodes);
    free(s->ents);
    free(s->heap);
    free(s);
}

int qk_sim_own(qk_sim *s, void *p, void (*fn)(void *))
{
    struct owned *o = PUSH(s->owned, s->n_owned);
    if (!o) {
        fn(p);
        return QK_ERR_NOMEM;
    }
    o->p = p;
    o->fn = fn;
    return 0;
}

qk_time qk_sim_now(const qk_sim *s)
{
    return s->now;
}

uint64_t qk_sim_seed(const qk_sim *s)
{
    return s->seed;
}

uint64_t qk_sim_events(const qk_sim *s)
{
    return s->events;
}

uint64_t qk_sim_noroute_drops(const qk_sim *s)
{
    return s->noroute;
}

uint64_t qk_sim_rand64(qk_sim *s)
{
    return qk_rng_next(&s->rng);
}

/* ---- event heap (indexed: each entity is in it at most once) ---- */

static int ent_less(const qk_sim *s, int a, int b)
{
    const ent *x = &s->ents[a], *y = &s->ents[b];
    return x->t < y->t || (x->t == y->t && x->seq < y->seq);
}

static void heap_place(qk_sim *s, size_t i, int e)
{
    s->heap[i] = e;
    s->ents[e].pos = (int)i;
}

static void sift_up(qk_sim *s, size_t i)
{
    int e = s->heap[i];
    while (i && ent_less(s, e, s->heap[(i - 1) / 2])) {
        heap_place(s, i, s->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    heap_place(s, i, e);
}

static void sift_down(qk_sim *s, size_t i)
{
    int e = s->heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= s->n_heap) break;
        if (c + 1 < s->n_heap && ent_less(s, s->heap[c + 1], s->heap[c])) c++;
        if (!ent_less(s, s->heap[c], e)) break;
        heap_place(s, i, s->heap[c]);
        i = c;
    }
    heap_place(s, i, e);
}

static void heap_remove(qk_sim *s, int e)
{
    size_t i = (size_t)s->ents[e].pos;
    s->ents[e].pos = -1;
    int last = s->heap[--s->n_heap];
    if (i == s->n_heap) return;
    heap_place(s, i, last);
    sift_up(s, i);
    sift_down(s, (size_t)s->ents[last].pos);
}

/* Schedule entity e at t (QK_TIME_INFINITE = unschedule). */
static void ent_set(qk_sim *s, int e, qk_time t)
{
    ent *x = &s->ents[e];
    if (t != QK_TIME_INFINITE && t < s->now) t = s->now;
    if (x->pos >= 0) {
        if (t == x->t) return;
        if (t == QK_TIME_INFINITE) {
            heap_remove(s, e);
            return;
        }
        int later = t > x->t;
        x->t = t;
        x->seq = s->seq++;
        if (later)
            sift_down(s, (size_t)x->pos);
        else
            sift_up(s, (size_t)x->pos);
        return;
    }
    if (t == QK_TIME_INFINITE) return;
    x->t = t;
    x->seq = s->seq++;
    s->heap[s->n_heap++] = e;
    sift_up(s, s->n_heap - 1);
}

static int ent_new(qk_sim *s, uint8_t kind, int idx)
{
    ent *e = PUSH(s->ents, s->n_ents);
    if (!e) return QK_ERR_NOMEM;
    int *h = realloc(s->heap, s->n_ents * sizeof *h);
    if (!h) return QK_ERR_NOMEM;
    s->heap = h;
    e->pos = -1;
    e->kind = kind;
    e->idx = idx;
    return (int)(s->n_ents - 1);
}

/* ---- hosts, links, routes ---- */

int qk_sim_host_add(qk_sim *s, const char *name, uint32_t ipv4)
{
    if (!name || strlen(name) >= sizeof s->hosts[0].name) return QK_ERR_INVALID_ARG;
    for (size_t i = 0; i < s->n_hosts; i++)
        if (!strcmp(s->hosts[i].name, name) || s->hosts[i].ip == ipv4) return QK_ERR_INVALID_ARG;
    host *h = PUSH(s->hosts, s->n_hosts);
    if (!h) return QK_ERR_NOMEM;
    strcpy(h->name, name);
    h->ip = ipv4;
    h->default_link = -1;
    return (int)(s->n_hosts - 1);
}

int qk_sim_host_find(const qk_sim *s, const char *name)
{
    for (size_t i = 0; i < s->n_hosts; i++)
        if (!strcmp(s->hosts[i].name, name)) return (int)i;
    return QK_ERR_NOT_FOUND;
}

size_t qk_sim_host_count(const qk_sim *s)
{
    return s->n_hosts;
}

const char *qk_sim_host_name(const qk_sim *s, int h)
{
    return h >= 0 && (size_t)h < s->n_hosts ? s->hosts[h].name : NULL;
}

static qk_addr mkaddr(uint32_t ip, uint16_t port)
{
    qk_addr a;
    memset(&a, 0, sizeof a);
    struct sockaddr_in *in = (struct sockaddr_in *)&a.ss;
    in->sin_family = AF_INET;
    in->sin_addr.s_addr = htonl(ip);
    in->sin_port = htons(port);
    a.len = sizeof *in;
    return a;
}

int qk_sim_addr_ipv4(const qk_addr *a, uint32_t *ip, uint16_t *port)
{
    if (a->ss.ss_family != AF_INET) return QK_ERR_INVALID_ARG;
    const struct sockaddr_in *in = (const struct sockaddr_in *)&a->ss;
    *ip = ntohl(in->sin_addr.s_addr);
    *port = ntohs(in->sin_port);
    return 0;
}

qk_addr qk_sim_host_addr(const qk_sim *s, int h, uint16_t port)
{
    if (h < 0 || (size_t)h >= s->n_hosts) {
        qk_addr z;
        memset(&z, 0, sizeof z);
        return z;
    }
    return mkaddr(s->hosts[h].ip, port);
}

static qk_sim_flow_acct *acct(qk_sim *s, uint32_t flow)
{
    if (flow == QK_SIM_NO_FLOW) return NULL;
    while (s->n_flows <= flow)
        if (!PUSH(s->flows, s->n_flows)) return NULL;
    return &s->flows[flow];
}

const qk_sim_flow_acct *qk_sim_flow_acct_get(const qk_sim *s, uint32_t flow)
{
    return flow < s->n_flows ? &s->flows[flow] : NULL;
}

static void hook_drop(void *ctx, const qk_pkt *p, qk_sim_drop why)
{
    qk_sim_flow_acct *a = acct(ctx, p->flow);
    if (a) a->drops++;
}

static void hook_mark(void *ctx, const qk_pkt *p)
{
    qk_sim_flow_acct *a = acct(ctx, p->flow);
    if (a) a->marks++;
}

static void hook_dequeue(void *ctx, const qk_pkt *p, qk_time sojourn)
{
    qk_sim_flow_acct *a = acct(ctx, p->flow);
    if (a) qk_hist_add(&a->qdelay, sojourn);
}

int qk_sim_link_add_sized(qk_sim *s, const char *name, int from, int to,
                          const qk_sim_link_cfg *caller, size_t caller_bytes)
{
    if (!name || strlen(name) >= sizeof s->links[0]->name || from < 0 || to < 0 ||
        (size_t)from >= s->n_hosts || (size_t)to >= s->n_hosts)
        return QK_ERR_INVALID_ARG;
    qk_sim_link_cfg imported, *cfg = &imported;
    if (qk_sim_link_cfg_import(cfg, caller, caller_bytes) || qk_sim_link_cfg_check(cfg, NULL))
        return QK_ERR_CONFIG;
    slink *l = calloc(1, sizeof *l);
    if (!l) return QK_ERR_NOMEM;
    size_t id = s->n_links;
    slink **slot = PUSH(s->links, s->n_links);
    if (!slot) {
        free(l);
        return QK_ERR_NOMEM;
    }
    *slot = l;
    strcpy(l->name, name);
    l->from = from;
    l->to = to;
    qk_link_init(&l->l, cfg, &s->pool, s->seed ^ ((id + 1) * 0x9e3779b97f4a7c15ull));
    l->l.hooks = (qk_link_hooks){s, hook_drop, hook_mark, hook_dequeue};
    l->ent = ent_new(s, ENT_LINK, (int)id);
    if (l->ent < 0) return l->ent;
    return (int)id;
}

int qk_sim_route_add(qk_sim *s, int h, int dst, int link)
{
    if (h < 0 || (size_t)h >= s->n_hosts || link < 0 || (size_t)link >= s->n_links ||
        (dst >= 0 && (size_t)dst >= s->n_hosts) || s->links[link]->from != h)
        return QK_ERR_INVALID_ARG;
    host *ho = &s->hosts[h];
    if (dst < 0) {
        ho->default_link = link;
        return 0;
    }
    route *r = PUSH(ho->routes, ho->n_routes);
    if (!r) return QK_ERR_NOMEM;
    r->ip = s->hosts[dst].ip;
    r->link = link;
    return 0;
}

size_t qk_sim_link_count(const qk_sim *s)
{
    return s->n_links;
}

const qk_sim_link_stats *qk_sim_link_stats_get(const qk_sim *s, int l)
{
    return l >= 0 && (size_t)l < s->n_links ? &s->links[l]->l.st : NULL;
}

const qk_sim_link_cfg *qk_sim_link_cfg_get(const qk_sim *s, int l)
{
    return l >= 0 && (size_t)l < s->n_links ? &s->links[l]->l.cfg : NULL;
}

const char *qk_sim_link_name(const qk_sim *s, int l)
{
    return l >= 0 && (size_t)l < s->n_links ? s->links[l]->name : NULL;
}

int qk_sim_link_find(const qk_sim *s, const char *name)
{
    for (size_t i = 0; i < s->n_links; i++)
        if (!strcmp(s->links[i]->name, name)) return (int)i;
    return QK_ERR_NOT_FOUND;
}

/* ---- nodes ---- */

static int node_new(qk_sim *s, int h, uint16_t port, const qk_sim_node_ops *ops, void *ctx)
{
    if (!ops) return QK_ERR_INVALID_ARG;
    node *n = PUSH(s->nodes, s->n_nodes);
    if (!n) return QK_ERR_NOMEM;
    int id = (int)(s->n_nodes - 1);
    n->host = h;
    n->port = port;
    n->ops = *ops;
    n->ctx = ctx;
    n->flow = s->cur_flow;
    n->ent = ent_new(s, ENT_NODE, id);
    if (n->ent < 0) return n->ent;
    qk_sim_node_update(s, id);
    return id;
}

/* qk_sim_node_ops crosses the boundary at the caller's sizeof (base/abi.h):
 * the first release's ends with on_timeout; a missing callback is NULL. */
#define NODE_OPS_V1_BYTES QK_ABI_END(qk_sim_node_ops, on_timeout)
QK_ABI_LAST_FIELD(qk_sim_node_ops, on_timeout);

int qk_sim_node_add_sized(qk_sim *s, int h, uint16_t port, const qk_sim_node_ops *caller_ops,
                          size_t ops_bytes, void *ctx)
{
    qk_sim_node_ops o = {0}, *ops = &o;
    int rc = qk_abi_copy_in(&o, sizeof o, caller_ops, ops_bytes, NODE_OPS_V1_BYTES);
    if (rc) return rc;
    if (h < 0 || (size_t)h >= s->n_hosts) return QK_ERR_INVALID_ARG;
    host *ho = &s->hosts[h];
    for (size_t i = 0; i < ho->n_ports; i++)
        if (ho->ports[i].port == port) return QK_ERR_INVALID_ARG;
    port_ent *pe = PUSH(ho->ports, ho->n_ports);
    if (!pe) return QK_ERR_NOMEM;
    int id = node_new(s, h, port, ops, ctx);
    if (id < 0) {
        ho->n_ports--;
        return id;
    }
    pe->port = port;
    pe->node = id;
    return id;
}

int qk_sim_timer_add(qk_sim *s, const qk_sim_node_ops *ops, void *ctx)
{
    return node_new(s, -1, 0, ops, ctx);
}

void qk_sim_set_current_flow(qk_sim *s, uint32_t flow)
{
    s->cur_flow = flow;
}

qk_addr qk_sim_node_addr(const qk_sim *s, int n)
{
    if (n < 0 || (size_t)n >= s->n_nodes) return qk_sim_host_addr(s, -1, 0);
    return qk_sim_host_addr(s, s->nodes[n].host, s->nodes[n].port);
}

void qk_sim_node_update(qk_sim *s, int id)
{
    if (id < 0 || (size_t)id >= s->n_nodes) return;
    node *n = &s->nodes[id];
    qk_time t =
        n->ops.next_timeout && n->ops.on_timeout ? n->ops.next_timeout(n->ctx) : QK_TIME_INFINITE;
    ent_set(s, n->ent, t);
}

/* ---- packet movement ---- */

static void link_enqueue(qk_sim *s, int link, qk_pkt *p)
{
    slink *l = s->links[link];
    s->events++;
    qk_link_enqueue(&l->l, p, s->now);
    ent_set(s, l->ent, qk_link_next(&l->l));
}

/* A packet is at host h: hand it to a local node or forward it. */
static void at_host(qk_sim *s, int h, qk_pkt *p)
{
    host *ho = &s->hosts[h];
    if (p->dst_ip == ho->ip) {
        for (size_t i = 0; i < ho->n_ports; i++) {
            if (ho->ports[i].port != p->dst_port) continue;
            int id = ho->ports[i].node;
            node *n = &s->nodes[id];
            qk_datagram d = {.data = p->data, .len = p->len, .ecn = p->ecn};
            d.local = mkaddr(p->dst_ip, p->dst_port);
            d.peer = mkaddr(p->src_ip, p->src_port);
            s->events++;
            n->ops.recv(n->ctx, s, &d, s->now);
            qk_pkt_put(&s->pool, p);
            qk_sim_node_update(s, id);
            return;
        }
    } else {
        int link = ho->default_link;
        for (size_t i = 0; i < ho->n_routes; i++)
            if (ho->routes[i].ip == p->dst_ip) {
                link = ho->routes[i].link;
                break;
            }
        if (link >= 0) {
            link_enqueue(s, link, p);
            return;
        }
    }
    s->noroute++;
    qk_sim_flow_acct *a = acct(s, p->flow);
    if (a) a->drops++;
    qk_pkt_put(&s->pool, p);
}

static int send_one(qk_sim *s, node *n, int src_host, uint16_t src_port, const uint8_t *data,
                    size_t len, uint8_t ecn, uint32_t ip, uint16_t port)
{
    qk_pkt *p = qk_pkt_get(&s->pool, len);
    if (!p) {
        qk_sim_flow_acct *a = acct(s, n->flow);
        if (a) a->drops++;
        return QK_ERR_NOMEM;
    }
    if (len) memcpy(p->data, data, len);
    p->ecn = ecn & 3;
    p->flow = n->flow;
    p->src_ip = s->hosts[src_host].ip;
    p->src_port = src_port;
    p->dst_ip = ip;
    p->dst_port = port;
    at_host(s, src_host, p);
    return 0;
}

/* The host whose port `port` belongs to node id at address ip, or -1. */
static int own_addr(const qk_sim *s, int id, uint32_t ip, uint16_t port)
{
    for (size_t h = 0; h < s->n_hosts; h++) {
        const host *ho = &s->hosts[h];
        if (ho->ip != ip) continue;
        for (size_t i = 0; i < ho->n_ports; i++)
            if (ho->ports[i].port == port && ho->ports[i].node == id) return (int)h;
    }
    return -1;
}

int qk_sim_send(qk_sim *s, int id, const qk_datagram *d)
{
    if (id < 0 || (size_t)id >= s->n_nodes || !d || (!d->data && d->len) || s->nodes[id].host < 0)
        return QK_ERR_INVALID_ARG;
    uint32_t ip;
    uint16_t port;
    if (qk_sim_addr_ipv4(&d->peer, &ip, &port)) return QK_ERR_INVALID_ARG;
    size_t seg = d->segment_bytes ? d->segment_bytes : d->len;
    if (seg > 65535) return QK_ERR_TOO_LARGE;
    node *n = &s->nodes[id];
    /* the source is d->local when it is one of the node's addresses (an alias) */
    int src_host = n->host;
    uint16_t src_port = n->port;
    uint32_t lip;
    uint16_t lport;
    if (!qk_sim_addr_ipv4(&d->local, &lip, &lport) && lip) {
        int h = own_addr(s, id, lip, lport);
        if (h >= 0) {
            src_host = h;
            src_port = lport;
        }
    }
    if (!d->len) return send_one(s, n, src_host, src_port, NULL, 0, d->ecn, ip, port);
    /* a GSO batch leaves as separate datagrams of segment_bytes (the last may be shorter) */
    for (size_t off = 0; off < d->len; off += seg) {
        size_t len = d->len - off < seg ? d->len - off : seg;
        int r = send_one(s, n, src_host, src_port, d->data + off, len, d->ecn, ip, port);
        if (r) return r;
    }
    return 0;
}

static int port_add(qk_sim *s, int h, uint16_t port, int id)
{
    host *ho = &s->hosts[h];
    for (size_t i = 0; i < ho->n_ports; i++)
        if (ho->ports[i].port == port) return QK_ERR_INVALID_ARG;
    port_ent *pe = PUSH(ho->ports, ho->n_ports);
    if (!pe) return QK_ERR_NOMEM;
    pe->port = port;
    pe->node = id;
    return 0;
}

static void port_remove(qk_sim *s, int h, uint16_t port, int id)
{
    host *ho = &s->hosts[h];
    for (size_t i = 0; i < ho->n_ports; i++)
        if (ho->ports[i].port == port && ho->ports[i].node == id) {
            ho->ports[i] = ho->ports[--ho->n_ports];
            return;
        }
}

int qk_sim_node_rebind(qk_sim *s, int id, int h, uint16_t port)
{
    if (id < 0 || (size_t)id >= s->n_nodes || s->nodes[id].host < 0 || h < 0 ||
        (size_t)h >= s->n_hosts)
        return QK_ERR_INVALID_ARG;
    node *n = &s->nodes[id];
    int rc = port_add(s, h, port, id);
    if (rc) return rc;
    port_remove(s, n->host, n->port, id);
    n->host = h;
    n->port = port;
    return 0;
}

int qk_sim_node_alias(qk_sim *s, int id, int h, uint16_t port)
{
    if (id < 0 || (size_t)id >= s->n_nodes || s->nodes[id].host < 0 || h < 0 ||
        (size_t)h >= s->n_hosts)
        return QK_ERR_INVALID_ARG;
    return port_add(s, h, port, id);
}

int qk_sim_link_set_mtu(qk_sim *s, int l, uint32_t mtu_bytes)
{
    if (l < 0 || (size_t)l >= s->n_links) return QK_ERR_INVALID_ARG;
    s->links[l]->l.cfg.mtu_bytes = mtu_bytes;
    return 0;
}

uint64_t qk_sim_run(qk_sim *s, qk_time until)
{
    uint64_t start = s->events;
    while (s->n_heap) {
        int e = s->heap[0];
        ent *x = &s->ents[e];
        if (x->t > until) break;
        s->now = x->t;
        if (x->kind == ENT_NODE) {
            int id = x->idx;
            node *n = &s->nodes[id];
            heap_remove(s, e);
            s->events++;
            n->ops.on_timeout(n->ctx, s, s->now);
            qk_sim_node_update(s, id);
        } else {
            slink *l = s->links[x->idx]; /* x may move if a callback adds nodes */
            qk_pkt *p;
            while ((p = qk_link_poll(&l->l, s->now, &s->events))) at_host(s, l->to, p);
            ent_set(s, l->ent, qk_link_next(&l->l));
        }
    }
    if (until != QK_TIME_INFINITE && s->now < until) s->now = until;
    return s->events - start;
}
