/* SPDX-License-Identifier: MIT */
/* Statistics lines the CLI's commands print (see cli_stats.h). */
#include "cli_stats.h"

#include <quack/io.h>
#include <stdio.h>

void cli_print_conn_stats(FILE *f, const qk_conn_stats *st)
{
    fprintf(f,
            "stats: rtt min %.3f ms smoothed %.3f ms var %.3f ms latest %.3f ms\n"
            "stats: cwnd %llu B ssthresh %llu B in_flight %llu B\n"
            "stats: pkts sent %llu received %llu lost %llu spurious %llu\n"
            "stats: bytes sent %llu received %llu; stream bytes sent %llu received %llu\n"
            "stats: ack frames sent %llu received %llu; pto %llu; congestion events %llu; "
            "keep-alives %llu\n"
            "stats: ack_frequency sent %llu received %llu; immediate_ack sent %llu received %llu\n"
            "stats: streams opened local %llu remote %llu; ecn ce received %llu\n",
            st->min_rtt_ns / 1e6, st->smoothed_rtt_ns / 1e6, st->rttvar_ns / 1e6,
            st->latest_rtt_ns / 1e6, (unsigned long long)st->cwnd_bytes,
            (unsigned long long)st->ssthresh_bytes, (unsigned long long)st->bytes_in_flight,
            (unsigned long long)st->pkts_sent, (unsigned long long)st->pkts_received,
            (unsigned long long)st->pkts_lost, (unsigned long long)st->pkts_spurious,
            (unsigned long long)st->bytes_sent, (unsigned long long)st->bytes_received,
            (unsigned long long)st->stream_bytes_sent,
            (unsigned long long)st->stream_bytes_received, (unsigned long long)st->ack_frames_sent,
            (unsigned long long)st->ack_frames_received, (unsigned long long)st->pto_count,
            (unsigned long long)st->congestion_events, (unsigned long long)st->keep_alives_sent,
            (unsigned long long)st->ack_frequency_frames_sent,
            (unsigned long long)st->ack_frequency_frames_received,
            (unsigned long long)st->immediate_acks_sent,
            (unsigned long long)st->immediate_acks_received,
            (unsigned long long)st->streams_opened_local,
            (unsigned long long)st->streams_opened_remote, (unsigned long long)st->ecn_ce_received);
    static const char *const ecn_states[] = {"off", "testing", "capable", "failed"};
    printf("stats: ecn %s; sent ect0 %llu; received ect0 %llu ect1 %llu ce %llu; "
           "peer reported ce %llu in %llu acks\n",
           ecn_states[st->ecn_state < 4 ? st->ecn_state : 0],
           (unsigned long long)st->pkts_sent_ect0, (unsigned long long)st->ecn_ect0_received,
           (unsigned long long)st->ecn_ect1_received, (unsigned long long)st->ecn_ce_received,
           (unsigned long long)st->ecn_ce_reported, (unsigned long long)st->ecn_ce_events);
    fprintf(f,
            "stats: rx window conn %llu B, stream %llu B (peak %llu B); rx buffered %llu B "
            "(peak %llu B)\n",
            (unsigned long long)st->conn_rx_window_bytes,
            (unsigned long long)st->max_stream_rx_window_bytes,
            (unsigned long long)st->peak_stream_rx_window_bytes,
            (unsigned long long)st->rx_buffered_bytes,
            (unsigned long long)st->peak_rx_buffered_bytes);
    static const char *const pref[] = {"none", "offered", "probing", "moved", "failed"};
    fprintf(f, "stats: path migrations %llu, validations %llu; preferred address %s\n",
            (unsigned long long)st->migrations, (unsigned long long)st->path_validations,
            pref[st->preferred_address < 5 ? st->preferred_address : 0]);
}

void cli_workers_addrs(const qk_workers *w, char *buf, size_t cap)
{
    qk_addr la;
    char pbuf[QK_ADDR_STRLEN];
    for (unsigned f = 0; f < 2; f++) /* RFC 9000 §9.6 */
        if (qk_workers_preferred_addr(w, f, &la) && qk_addr_format(&la, pbuf, sizeof pbuf) >= 0)
            printf("preferred address %s\n", pbuf);
    qk_workers_local_addr(w, &la);
    if (qk_addr_format(&la, buf, cap) < 0) snprintf(buf, cap, "?");
}

void cli_print_workers_stats(FILE *f, qk_workers *w)
{
    unsigned n = qk_workers_count(w);
    if (n == 1) {
        cli_print_endpoint_stats(f, qk_workers_endpoint(w, 0));
        return;
    }
    for (unsigned i = 0; i < n; i++) {
        fprintf(f, "worker %u ", i);
        cli_print_endpoint_stats(f, qk_workers_endpoint(w, i));
    }
    qk_workers_stats st;
    qk_workers_get_stats(w, UINT32_MAX, &st);
    fprintf(f, "workers: %u steered_short %llu steered_long %llu steer_dropped %llu\n", n,
            (unsigned long long)st.steered_short, (unsigned long long)st.steered_long,
            (unsigned long long)st.steer_dropped);
}

void cli_print_endpoint_stats(FILE *f, const qk_endpoint *ep)
{
    qk_endpoint_stats st;
    qk_endpoint_stats_get(ep, &st);
    fprintf(f,
            "endpoint: initials_accepted %llu initials_validated %llu retry_sent %llu "
            "retry_load %llu drops_handshakes %llu drops_connections %llu initials_dropped %llu "
            "handshakes_now %llu resets_sent %llu vn_sent %llu send_buffered_peak_bytes %llu\n",
            (unsigned long long)st.initials_accepted, (unsigned long long)st.initials_validated,
            (unsigned long long)st.retry_sent, (unsigned long long)st.retry_load,
            (unsigned long long)st.drops_handshakes, (unsigned long long)st.drops_connections,
            (unsigned long long)st.initials_dropped, (unsigned long long)st.handshakes_now,
            (unsigned long long)st.resets_sent, (unsigned long long)st.vn_sent,
            (unsigned long long)st.send_buffered_peak_bytes);
}
