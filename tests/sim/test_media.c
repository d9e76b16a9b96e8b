/* SPDX-License-Identifier: MIT */
/* End to end in the simulator: the capped CC bypass under misuse
 * (a bulk transfer marked urgent), the dead-path detection while audio
 * drips through the bypass, and urgent frames leading a suspended link's
 * queue (conn_send.c feedback_late). */
#include "qk_test.h"
#include "quic_env.h"
#include "sim/flow_media.h"
#include "sim/link.h"

#define MS  QK_NS_PER_MS
#define SEC QK_NS_PER_S

static void urgent_tune(void *ctx, qk_config *cfg, bool server)
{
    (void)ctx;
    if (server) cfg->bypass_urgency_limit = 5; /* the sender of the download */
}

/* The application marks its bulk download urgency 0 as the stream opens. */
static void urgent_event(void *ctx, qk_simq *q, bool server, const qk_event *ev, qk_time now)
{
    (void)ctx, (void)q, (void)now;
    if (server && ev->type == QK_EV_STREAM_OPENED)
        qk_stream_set_priority(ev->conn, ev->stream_id, 0, false);
}

/* Misuse: the bypass adds at most the bucket (2,560 B + 125,000 B/s) beyond
 * what the congestion window allowed, over the whole transfer. */
static void test_misuse_bulk_marked_urgent(void **state)
{
    (void)state;
    qk_sim_link_cfg l = quic_env_link();
    l.rate_bps = 20000000;
    l.limit_bytes = 30000; /* a small queue: losses keep the window in check */
    quic_env e;
    assert_int_equal(quic_env_init(&e, 7, &l, &l), 0);
    qk_simq_cfg c = {.cc = QK_CONFIG_CC_CUBIC,
                     .size_bytes = 8u << 20,
                     .tune = urgent_tune,
                     .on_event = urgent_event};
    qk_simq *q = quic_env_flow(&e, 4433, &c);
    assert_non_null(q);
    assert_true(quic_env_run_done(&e, q, 30 * SEC));
    const qk_simq_result *r = qk_simq_result_get(q);
    assert_false(r->mismatch);
    assert_true(r->hash_read == r->hash_written);
    const qk_conn_stats *s = &r->server_stats;
    double t = (double)(r->completion_ns - r->connected_ns) / 1e9;
    printf("misuse: %.2f s, bypass %llu pkts %llu B (cap %.0f B), lost %llu\n", t,
           (unsigned long long)s->bypass_pkts, (unsigned long long)s->bypass_bytes,
           2560 + 125000 * t, (unsigned long long)s->pkts_lost);
    assert_true(s->bypass_pkts > 0); /* the window did block it and the bypass was used */
    assert_true((double)s->bypass_bytes <= 2560 + 125000 * t);
    quic_env_free(&e);
}

/* The link is cut for good at 2 s while audio drips under the bypass: the
 * sender declares the path failed within path_failed (1 s) + one PTO of the
 * cut, not at the 30 s idle timeout. */
static void test_dead_path_failed_in_time(void **state)
{
    (void)state;
    qk_sim_link_cfg l = quic_env_link();
    l.blackhole_start_ns = 2 * SEC;
    l.blackhole_end_ns = 1000 * SEC;
    quic_env e;
    assert_int_equal(quic_env_init(&e, 9, &l, &l), 0);
    qk_simm_cfg c = {.cc = QK_CONFIG_CC_CUBIC,
                     .duration_ns = 20 * SEC,
                     .bypass_limit = 5,
                     .skip = {false, true, true}};
    int err = 0;
    qk_simm *m = qk_simm_new(e.sim, e.a, e.b, 4433, &c, &err);
    assert_non_null(m);
    qk_sim_run(e.sim, 8 * SEC);
    const qk_simm_result *r = qk_simm_result_get(m);
    qk_conn_stats s = r->client_stats;
    qk_time pto = s.smoothed_rtt_ns + 4 * s.rttvar_ns + 25 * MS; /* RFC 9002 §6.2.1 */
    printf("dead path: failed at %.3f s (cut 2 s, PTO %.1f ms), reason '%s', bypass %llu pkts, "
           "degraded %llu\n",
           (double)r->path_failed_ns / 1e9, (double)pto / 1e6, r->close_reason,
           (unsigned long long)s.bypass_pkts, (unsigned long long)r->path_degraded);
    assert_int_equal(r->path_failed, 1);
    assert_true(r->path_failed_ns >= 2 * SEC + SEC - 100 * MS);
    assert_true(r->path_failed_ns <= 2 * SEC + SEC + pto);
    assert_true(r->client_closed);
    assert_non_null(strstr(r->close_reason, "path failed"));
    assert_true(r->path_degraded >= 1);
    /* audio kept dripping into the dead path until it failed (at this rate it
     * fits the window; the bypass drip is test_misuse's and test_urgency's) */
    assert_true(r->f[0].frames_sent > r->f[0].frames_received + 40);
    assert_true(r->f[0].frames_received > 90 && r->f[0].frames_received < 105);
    qk_sim_del(e.sim);
    qk_simm_del(m);
}

/* media over 50 Mbit/s, 2 ms each way, twelve 200 ms suspensions 10 ms
 * apart from 1 s (media-wifi's worst stretch); returns the result. */
static qk_simm_result run_suspended(uint8_t bypass_limit)
{
    qk_sim_link_cfg l = quic_env_link();
    l.rate_bps = 50000000;
    l.delay_ns = 2 * MS;
    l.limit_bytes = 0;
    l.suspend_start_ns = SEC;
    l.suspend_period_ns = 210 * MS;
    l.suspend_ns = 200 * MS;
    l.suspend_count = 12;
    quic_env e;
    assert_int_equal(quic_env_init(&e, 3, &l, &l), 0);
    qk_simm_cfg c = {
        .cc = QK_CONFIG_CC_CUBIC, .duration_ns = 4 * SEC, .bypass_limit = bypass_limit};
    int err = 0;
    qk_simm *m = qk_simm_new(e.sim, e.a, e.b, 4433, &c, &err);
    assert_non_null(m);
    qk_sim_run(e.sim, 6 * SEC);
    qk_simm_result r = *qk_simm_result_get(m);
    printf("suspended, bypass limit %u: audio %llu/%llu avg %.1f max %.1f ms, LD max %.1f ms, "
           "HD %llu/%llu\n",
           bypass_limit, (unsigned long long)r.f[0].frames_received,
           (unsigned long long)r.f[0].frames_sent, r.f[0].avg_ms, r.f[0].max_ms, r.f[1].max_ms,
           (unsigned long long)r.f[2].frames_received, (unsigned long long)r.f[2].frames_sent);
    qk_sim_del(e.sim);
    qk_simm_del(m);
    return r;
}

/* With the bypass, HD video stops entering a link whose ACKs are late, so
 * the audio and LD frames written during a suspension lead its queue and
 * leave in the 10 ms it opens: no frame waits past suspension + one way +
 * 5 ms. Without it HD video fills the queue and some audio frames wait for
 * the next opening (> 300 ms). HD video keeps flowing either way. */
static void test_urgent_leads_suspended_queue(void **state)
{
    (void)state;
    qk_simm_result on = run_suspended(5), off = run_suspended(0);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(on.f[i].frames_received, on.f[i].frames_sent);
        assert_true(on.f[i].max_ms <= 200 + 2 + 5);
    }
    assert_true(off.f[0].max_ms > 300);
    assert_true(on.f[2].frames_received == on.f[2].frames_sent && on.f[2].frames_sent >= 240);
    assert_int_equal(on.path_failed, 0);
    assert_false(on.mismatch);
}

static uint8_t bulk_limit;

static void bulk_tune(void *ctx, qk_config *cfg, bool server)
{
    (void)ctx;
    if (server) cfg->bypass_urgency_limit = bulk_limit;
}

/* The download is HD-like: urgency 6, above the bypass limit. */
static void bulk_event(void *ctx, qk_simq *q, bool server, const qk_event *ev, qk_time now)
{
    (void)ctx, (void)q, (void)now;
    if (server && ev->type == QK_EV_STREAM_OPENED)
        qk_stream_set_priority(ev->conn, ev->stream_id, 6, false);
}

static double bulk_seconds(uint8_t limit, qk_cc_kind cc)
{
    bulk_limit = limit;
    qk_sim_link_cfg l = quic_env_link();
    l.rate_bps = 50000000;
    l.delay_ns = 1 * MS;
    l.limit_bytes = 40000;
    quic_env e;
    assert_int_equal(quic_env_init(&e, 11, &l, &l), 0);
    qk_simq_cfg c = {.cc = cc, .size_bytes = 4u << 20, .tune = bulk_tune, .on_event = bulk_event};
    qk_simq *q = quic_env_flow(&e, 4433, &c);
    assert_non_null(q);
    assert_true(quic_env_run_done(&e, q, 30 * SEC));
    const qk_simq_result *r = qk_simq_result_get(q);
    assert_true(r->hash_read == r->hash_written);
    double t = (double)(r->completion_ns - r->connected_ns) / 1e9;
    quic_env_free(&e);
    return t;
}

/* On a working path ACKs keep coming, so the hold for late ACKs does not
 * slow a non-urgent bulk download on a bypass connection (50 Mbit/s, 2 ms
 * RTT: the hold's threshold is 2 ms). */
static void test_hold_free_on_working_path(void **state)
{
    (void)state;
    double off = bulk_seconds(0, QK_CONFIG_CC_CUBIC), on = bulk_seconds(5, QK_CONFIG_CC_CUBIC);
    printf("bulk at urgency 6, cubic: %.3f s without the bypass, %.3f s with it\n", off, on);
    assert_true(on <= off * 1.02);
    off = bulk_seconds(0, QK_CONFIG_CC_BBR), on = bulk_seconds(5, QK_CONFIG_CC_BBR);
    printf("bulk at urgency 6, bbr: %.3f s without the bypass, %.3f s with it\n", off, on);
    assert_true(on <= off * 1.02);
}

/* Data datagrams the media sender hands over at one instant (back to back),
 * from from_ns on. */
typedef struct burst_ctx {
    qk_time from_ns, last_ns;
    uint32_t run, max_run;
    uint64_t data_pkts;
} burst_ctx;

static void burst_on_send(void *ctx, qk_simq *q, bool server, const qk_datagram *d, qk_time now)
{
    burst_ctx *b = ctx;
    (void)q;
    if (server || now < b->from_ns || d->len < 1000) return; /* ACKs and audio are small */
    b->run = now == b->last_ns ? b->run + 1 : 1;
    b->last_ns = now;
    if (b->run > b->max_run) b->max_run = b->run;
    b->data_pkts++;
}

/* Media with BBR and the bypass over 50 Mbit/s, 2 ms each way, 200 ms
 * suspensions 10 ms apart from 4 s (media-wifi's worst stretch, once BBR has
 * left Startup). When the link resumes the held video may go, and the pacer
 * lets only BBR's send quantum leave back to back (draft-ietf-ccwg-bbr
 * §5.6.3: 1 ms at the pacing rate, ~60 Mbit/s here: 5 datagrams), not the
 * 10-datagram initial-window burst of a window-based controller (RFC 9002
 * §7.7) that it allowed before (conn_send.c pacer_floor_pkts): those extra
 * datagrams sat in the link queue ahead of the urgent frames written in the
 * next suspension. */
static void test_bbr_bursts_within_send_quantum(void **state)
{
    (void)state;
    qk_sim_link_cfg l = quic_env_link();
    l.rate_bps = 50000000;
    l.delay_ns = 2 * MS;
    l.limit_bytes = 0;
    l.suspend_start_ns = 4 * SEC;
    l.suspend_period_ns = 210 * MS;
    l.suspend_ns = 200 * MS;
    l.suspend_count = 8;
    quic_env e;
    assert_int_equal(quic_env_init(&e, 3, &l, &l), 0);
    burst_ctx b = {.from_ns = 4 * SEC};
    qk_simm_cfg c = {.cc = QK_CONFIG_CC_BBR,
                     .duration_ns = 6 * SEC,
                     .bypass_limit = 5,
                     .on_send = burst_on_send,
                     .send_ctx = &b};
    int err = 0;
    qk_simm *m = qk_simm_new(e.sim, e.a, e.b, 4433, &c, &err);
    assert_non_null(m);
    qk_sim_run(e.sim, 8 * SEC);
    const qk_simm_result *r = qk_simm_result_get(m);
    printf("bbr media: at most %u data datagrams back to back after 4 s (%llu sent), "
           "HD %llu/%llu\n",
           b.max_run, (unsigned long long)b.data_pkts, (unsigned long long)r->f[2].frames_received,
           (unsigned long long)r->f[2].frames_sent);
    assert_true(b.data_pkts > 300);
    assert_true(b.max_run >= 2 && b.max_run <= 6);
    for (int i = 0; i < QK_SIMM_FLOWS; i++)
        assert_int_equal(r->f[i].frames_received, r->f[i].frames_sent);
    assert_false(r->mismatch);
    qk_sim_del(e.sim);
    qk_simm_del(m);
}

/* bench/scenarios/media-wifi.ini's suspensions (both directions), ms:
 * picoquic's mediatest_wifi schedule up to 11 s. */
static const uint32_t wifi_ms[][2] = {
    {900, 1000},    {1900, 2000},   {2900, 3000},  {3900, 4000},   {4900, 5000},   {5010, 5090},
    {5110, 5270},   {5310, 5490},   {5570, 5770},  {5780, 6000},   {6020, 6260},   {6300, 6320},
    {6400, 6440},   {6450, 6530},   {6550, 6710},  {6750, 6930},   {7010, 7210},   {7220, 7440},
    {7460, 7700},   {7740, 7760},   {7840, 7880},  {7890, 7970},   {7990, 8150},   {8190, 8370},
    {8450, 8650},   {8660, 8880},   {8900, 9140},  {9180, 9200},   {9280, 9320},   {9330, 9410},
    {9430, 9590},   {9630, 9810},   {9890, 10090}, {10100, 10320}, {10340, 10580}, {10620, 10640},
    {10720, 10760}, {10770, 10850}, {10870, 11030}};
#define WIFI_N (sizeof wifi_ms / sizeof wifi_ms[0])

static void wifi_link(qk_sim_link_cfg *l)
{
    l->rate_bps = 50000000;
    l->delay_ns = 2 * MS;
    l->limit_bytes = 0;
    for (size_t i = 0; i < WIFI_N; i++) {
        l->suspend_list[i][0] = wifi_ms[i][0] * MS;
        l->suspend_list[i][1] = wifi_ms[i][1] * MS;
    }
    l->n_suspend_list = WIFI_N;
}

/* When a datagram handed to the suspended-at-times link at t starts to
 * leave it: t, or the end of the suspension holding t. */
static qk_time wifi_resume(qk_time t)
{
    for (size_t i = 0; i < WIFI_N; i++)
        if (t >= wifi_ms[i][0] * MS && t < wifi_ms[i][1] * MS) return wifi_ms[i][1] * MS;
    return t;
}

/* A frame's floor (bench/media.sh): one way + the wait until the suspension
 * holding its send time ends; ms. */
static double wifi_floor_ms(double sent_s)
{
    qk_time t = (qk_time)(sent_s * 1e9 + 0.5);
    return (double)(wifi_resume(t) - t) / 1e6 + 2.0;
}

/* The sender's forward link modelled as bench/media.sh ahead() does (a FIFO
 * at 50 Mbit/s of UDP payload, closed during the suspensions): the bytes
 * still queued in it when each suspension from 5 s on begins, which every
 * frame written during that suspension waits behind. */
typedef struct wifi_queue {
    qk_time free_ns;     /* the link is busy until then */
    size_t next;         /* the next suspension to sample */
    struct wifi_dgram {  /* datagrams still queued at the last sample and sent since */
        qk_time done_ns; /* transmission ends */
        uint32_t len;
    } q[4096];
    size_t n;
    uint64_t at_start_bytes, at_start_max_bytes;
} wifi_queue;

static void wifi_on_send(void *ctx, qk_simq *q, bool server, const qk_datagram *d, qk_time now)
{
    wifi_queue *w = ctx;
    (void)q;
    if (server) return;
    while (w->next < WIFI_N && wifi_ms[w->next][0] * MS <= now) {
        qk_time a = wifi_ms[w->next++][0] * MS;
        uint64_t b = 0;
        size_t k = 0;
        for (size_t i = 0; i < w->n; i++)
            if (w->q[i].done_ns > a) {
                b += w->q[i].len;
                w->q[k++] = w->q[i];
            }
        if (a >= 5 * SEC) {
            w->at_start_bytes += b;
            if (b > w->at_start_max_bytes) w->at_start_max_bytes = b;
        }
        w->n = k;
    }
    qk_time st = wifi_resume(now > w->free_ns ? now : w->free_ns);
    w->free_ns = st + (qk_time)d->len * 8 * SEC / 50000000;
    if (w->n < sizeof w->q / sizeof w->q[0])
        w->q[w->n++] = (struct wifi_dgram){w->free_ns, (uint32_t)d->len};
}

/* Average excess over the floor of one flow's frames, from the frames CSV. */
static double excess_ms(FILE *csv, const char *flow)
{
    char line[256], name[32];
    double sent, recv, sum = 0;
    unsigned n = 0;
    rewind(csv);
    while (fgets(line, sizeof line, csv))
        if (sscanf(line, "%31[^,],%*u,%*u,%lf,%lf", name, &sent, &recv) == 3 &&
            !strcmp(name, flow)) {
            sum += (recv - sent) * 1e3 - wifi_floor_ms(sent);
            n++;
        }
    return n ? sum / n : 1e9;
}

/* The target with BBR: media-wifi, bypass + bucket, audio and LD
 * video within 1.5 ms of their floor on average. Non-urgent data (HD
 * video) brings bytes in flight only up to BBR's pipe (conn_send.c
 * pipe_limit_bytes), so when the link opens for 10-20 ms from 5 s on, the
 * held HD video does not fill its queue ahead of the LD frames of the next
 * suspension. Before, BBR put it in flight up to its cwnd (2 BDP + the
 * ACK-aggregation allowance): LD +1.56 ms, audio +1.29, and by the model in
 * wifi_on_send 109 kB queued at the suspensions' starts from 5 s (55 kB
 * with the limit; the figure is printed, not asserted). */
static void test_bbr_media_wifi_near_floor(void **state)
{
    (void)state;
    qk_sim_link_cfg l = quic_env_link();
    wifi_link(&l);
    quic_env e;
    assert_int_equal(quic_env_init(&e, 20, &l, &l), 0);
    static wifi_queue w;
    memset(&w, 0, sizeof w);
    FILE *csv = tmpfile();
    assert_non_null(csv);
    qk_simm_cfg c = {.cc = QK_CONFIG_CC_BBR,
                     .duration_ns = 10 * SEC,
                     .bypass_limit = 5,
                     .frames_csv = csv,
                     .on_send = wifi_on_send,
                     .send_ctx = &w};
    int err = 0;
    qk_simm *m = qk_simm_new(e.sim, e.a, e.b, 4433, &c, &err);
    assert_non_null(m);
    qk_sim_run(e.sim, 11 * SEC);
    const qk_simm_result *r = qk_simm_result_get(m);
    double au = excess_ms(csv, "audio"), ld = excess_ms(csv, "ld-video");
    printf("bbr media-wifi: audio %+.2f ms, LD %+.2f ms over the floor, HD %llu/%llu; queued at "
           "suspension starts from 5 s: %llu B, at most %llu B\n",
           au, ld, (unsigned long long)r->f[2].frames_received,
           (unsigned long long)r->f[2].frames_sent, (unsigned long long)w.at_start_bytes,
           (unsigned long long)w.at_start_max_bytes);
    for (int i = 0; i < QK_SIMM_FLOWS; i++)
        assert_int_equal(r->f[i].frames_received, r->f[i].frames_sent);
    assert_true(au <= 1.5);
    assert_true(ld <= 1.5);
    assert_true(r->f[0].max_ms <= 240 + 2 + 5 && r->f[1].max_ms <= 240 + 2 + 5);
    assert_int_equal(r->path_failed, 0);
    assert_false(r->mismatch);
    fclose(csv);
    qk_sim_del(e.sim);
    qk_simm_del(m);
}

/* A member of bench/media.sh's schedule family: both links at rate_mbit and
 * owd_ms one way, suspend_random = seed N, count 30, length 20ms-300ms,
 * gap 10ms-300ms, start 1s; media 10 s with the bypass + bucket (and the
 * bulk neighbour when asked). */
typedef struct family_member {
    uint64_t rate_mbit, owd_ms, seed;
    bool bulk;
    qk_cc_kind cc;
    bool oracle; /* qk_simm_cfg.oracle_link = the forward link */
} family_member;

typedef struct family_result {
    double excess_ms[2]; /* audio, LD: average over the floor */
    double max_ms, bound_ms, target_ms;
    uint64_t hd_sent, hd_received;
    uint64_t held_bytes;   /* the sender's datagrams while the oracle would hold */
    qk_time held_ns;       /* how long it would hold, in all */
    uint64_t held_windows; /* suspensions */
} family_result;

/* Bytes the client sends while the oracle would hold (qk_simm_oracle_held). */
typedef struct held_count {
    const qk_sim_link_cfg *l;
    uint64_t bytes;
} held_count;

static void count_held(void *ctx, qk_simq *q, bool server, const qk_datagram *d, qk_time now)
{
    (void)q;
    held_count *h = ctx;
    qk_time until;
    if (!server && qk_simm_oracle_held(h->l, now, &until)) h->bytes += d->len;
}

static family_result run_member(const family_member *fm)
{
    qk_sim_link_cfg l = quic_env_link();
    l.rate_bps = fm->rate_mbit * 1000000;
    l.delay_ns = fm->owd_ms * MS;
    l.limit_bytes = 0;
    char gen[128];
    snprintf(gen, sizeof gen, "seed %llu, count 30, length 20ms-300ms, gap 10ms-300ms, start 1s",
             (unsigned long long)fm->seed);
    qk_sim_suspend_gen g;
    assert_int_equal(qk_sim_suspend_gen_parse(gen, &g), 0);
    assert_int_equal(qk_sim_suspend_gen_fill(&g, &l), 0);
    quic_env e;
    assert_int_equal(quic_env_init(&e, fm->seed, &l, &l), 0);
    FILE *csv = tmpfile();
    assert_non_null(csv);
    held_count hc = {.l = &l};
    qk_simm_cfg c = {.cc = fm->cc,
                     .duration_ns = 10 * SEC,
                     .bypass_limit = 5,
                     .bulk = fm->bulk,
                     .oracle_link = fm->oracle ? &l : NULL,
                     .frames_csv = csv,
                     .on_send = count_held,
                     .send_ctx = &hc};
    int err = 0;
    qk_simm *m = qk_simm_new(e.sim, e.a, e.b, 4433, &c, &err);
    assert_non_null(m);
    qk_sim_run(e.sim, 12 * SEC);
    const qk_simm_result *r = qk_simm_result_get(m);
    family_result fr = {.max_ms = r->f[0].max_ms,
                        .hd_sent = r->f[2].frames_sent,
                        .hd_received = r->f[2].frames_received,
                        .target_ms = 1.5 + 2 * 1452 * 8 * 1e3 / (double)l.rate_bps};
    qk_time longest = 0;
    for (size_t i = 0; i < l.n_suspend_list; i++) {
        if (l.suspend_list[i][1] - l.suspend_list[i][0] > longest)
            longest = l.suspend_list[i][1] - l.suspend_list[i][0];
        fr.held_ns += l.suspend_list[i][1] - l.suspend_list[i][0];
    }
    fr.held_bytes = hc.bytes;
    fr.held_windows = l.n_suspend_list;
    fr.bound_ms = (double)(longest + l.delay_ns) / 1e6 + 5;
    const char *names[2] = {"audio", "ld-video"};
    for (int f = 0; f < 2; f++) {
        char line[256], name[32];
        double sent, recv, sum = 0;
        unsigned n = 0;
        rewind(csv);
        while (fgets(line, sizeof line, csv))
            if (sscanf(line, "%31[^,],%*u,%*u,%lf,%lf", name, &sent, &recv) == 3 &&
                !strcmp(name, names[f])) {
                qk_time t = (qk_time)(sent * 1e9 + 0.5), resume = t;
                for (size_t i = 0; i < l.n_suspend_list; i++)
                    if (t >= l.suspend_list[i][0] && t < l.suspend_list[i][1])
                        resume = l.suspend_list[i][1];
                sum += (recv - sent) * 1e3 - (double)(resume - t + l.delay_ns) / 1e6;
                n++;
            }
        fr.excess_ms[f] = n ? sum / n : 1e9;
    }
    printf("member %llu Mbit/s %llu ms seed %llu%s %s: audio %+.2f LD %+.2f ms over the floor "
           "(target %.2f), audio max %.1f ms (bound %.1f), HD %llu/%llu%s, %llu B sent while "
           "an oracle holds\n",
           (unsigned long long)fm->rate_mbit, (unsigned long long)fm->owd_ms,
           (unsigned long long)fm->seed, fm->bulk ? " bulk" : "",
           fm->cc == QK_CONFIG_CC_BBR ? "bbr" : "cubic", fr.excess_ms[0], fr.excess_ms[1],
           fr.target_ms, fr.max_ms, fr.bound_ms, (unsigned long long)fr.hd_received,
           (unsigned long long)fr.hd_sent, fm->oracle ? " (oracle)" : "",
           (unsigned long long)fr.held_bytes);
    assert_false(r->mismatch);
    assert_int_equal(r->path_failed, 0);
    for (int f = 0; f < 2; f++) assert_int_equal(r->f[f].frames_received, r->f[f].frames_sent);
    fclose(csv);
    qk_sim_del(e.sim);
    qk_simm_del(m);
    return fr;
}

/* Two family members where the targets hold with both controllers (the
 * short path at 50 Mbit/s, and 15 ms one way where HD video entering a
 * suspension before its ACKs stop is only 1 ms of link time per frame):
 * audio and LD video within floor + 1.5 ms + two datagrams' serialization,
 * audio max within longest suspension + one way + 5 ms, every HD frame. */
static void test_family_targets(void **state)
{
    (void)state;
    const family_member ms[] = {{50, 2, 2, false, QK_CONFIG_CC_CUBIC, false},
                                {50, 2, 2, false, QK_CONFIG_CC_BBR, false},
                                {50, 15, 3, false, QK_CONFIG_CC_CUBIC, false},
                                {50, 15, 3, false, QK_CONFIG_CC_BBR, false}};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
        family_result r = run_member(&ms[i]);
        assert_true(r.excess_ms[0] <= r.target_ms && r.excess_ms[1] <= r.target_ms);
        assert_true(r.max_ms <= r.bound_ms);
        assert_int_equal(r.hd_received, r.hd_sent);
    }
}

/* A bulk upload at urgency 7 on the media connection (20 Mbit/s, 15 ms one
 * way): the pipe limit (conn_send.c pipe_limit_bytes, the delivery-rate BDP
 * for every controller) keeps its standing queue out of the link, so the
 * audio max stays within its bound and HD video keeps flowing; before, the
 * bulk's queue put audio +130 ms over its floor with CUBIC. The averages
 * stay above their target here (docs/experiments/media.md: the urgent
 * frames of a suspension queue behind each other and behind the HD video
 * sent before the sender can know), so this asserts the neighbour's cost,
 * not the target: under 10 ms. */
static void test_family_bulk_neighbour(void **state)
{
    (void)state;
    const family_member ms[] = {{20, 15, 1, true, QK_CONFIG_CC_CUBIC, false},
                                {20, 15, 1, true, QK_CONFIG_CC_BBR, false}};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
        family_result r = run_member(&ms[i]);
        assert_true(r.excess_ms[0] <= 10 && r.excess_ms[1] <= 10);
        assert_true(r.max_ms <= r.bound_ms);
        assert_int_equal(r.hd_received, r.hd_sent);
    }
}

/* The oracle (flow_media.c, key oracle; bench/media.sh's family runs it to
 * bound what any detector could do): while the forward link was suspended
 * one one-way delay + the margin ago, the sender sends only what the bypass
 * bucket lets through (1 Mbit/s, 2,560 B per suspension) and ACKs. Its own
 * rule lets HD video in until half a min RTT + 1 ms after the last ACK, so
 * it sends more in those windows (525 kB against 336 kB here, most of the
 * latter audio and LD video). */
static void test_family_oracle_holds(void **state)
{
    (void)state;
    const family_member own = {20, 15, 1, false, QK_CONFIG_CC_BBR, false};
    const family_member orc = {20, 15, 1, false, QK_CONFIG_CC_BBR, true};
    family_result a = run_member(&own), b = run_member(&orc);
    uint64_t bucket = 2560, mtu = 1500; /* a full bucket and a datagram past it per window */
    uint64_t allow =
        (uint64_t)((double)b.held_ns / 1e9 * 1e6 / 8) + b.held_windows * (bucket + mtu);
    printf("held: own rule %llu B, oracle %llu B, bucket allowance %llu B\n",
           (unsigned long long)a.held_bytes, (unsigned long long)b.held_bytes,
           (unsigned long long)allow);
    assert_true(b.held_bytes <= allow);
    assert_true(b.held_bytes * 5 < a.held_bytes * 4); /* at least a fifth less */
    assert_int_equal(b.hd_received, b.hd_sent);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_misuse_bulk_marked_urgent),
        cmocka_unit_test(test_dead_path_failed_in_time),
        cmocka_unit_test(test_urgent_leads_suspended_queue),
        cmocka_unit_test(test_hold_free_on_working_path),
        cmocka_unit_test(test_bbr_bursts_within_send_quantum),
        cmocka_unit_test(test_bbr_media_wifi_near_floor),
        cmocka_unit_test(test_family_targets),
        cmocka_unit_test(test_family_bulk_neighbour),
        cmocka_unit_test(test_family_oracle_holds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
