/* qlog (draft-ietf-quic-qlog-main-schema / -quic-events) as JSON-SEQ: one
 * file per connection, each record prefixed by RS (0x1e) and ended by LF. */
#include "transport/conn.h"

#include <stdio.h>
#include <string.h>

static const char *pkt_type_name(qk_pkt_type t)
{
    switch (t) {
    case QK_PKT_INITIAL: return "initial";
    case QK_PKT_HANDSHAKE: return "handshake";
    case QK_PKT_0RTT: return "0RTT";
    case QK_PKT_1RTT: return "1RTT";
    case QK_PKT_RETRY: return "retry";
    case QK_PKT_VN: return "version_negotiation";
    default: return "unknown";
    }
}

static double ms(qk_conn *c, qk_time now)
{
    c->qlog_last = now;
    return (double)(now - c->qlog_start) / 1e6;
}

void qk_qlog_open(qk_conn *c, const char *dir, qk_time now)
{
    char path[512], hex[2 * QK_MAX_CID_LEN + 1];
    for (size_t i = 0; i < c->odcid.len; i++) snprintf(hex + 2 * i, 3, "%02x", c->odcid.b[i]);
    hex[2 * c->odcid.len] = 0;
    snprintf(path, sizeof path, "%s/%s_%s.sqlog", dir, hex, c->is_server ? "server" : "client");
    c->qlog = fopen(path, "w");
    if (!c->qlog) return;
    c->qlog_start = now;
    fprintf(c->qlog,
            "\x1e{\"qlog_version\":\"0.3\",\"qlog_format\":\"JSON-SEQ\",\"title\":\"quack\","
            "\"trace\":{\"vantage_point\":{\"type\":\"%s\"},\"common_fields\":{\"ODCID\":\"%s\","
            "\"time_format\":\"relative\",\"reference_time\":0}}}\n",
            c->is_server ? "server" : "client", hex);
}

void qk_qlog_close(qk_conn *c)
{
    if (c->qlog) fclose(c->qlog);
    c->qlog = NULL;
}

static void print_frame(FILE *f, const qk_frame *fr)
{
    uint64_t t = fr->type;
    if (qk_frame_is_stream(t)) {
        fprintf(f,
                "{\"frame_type\":\"stream\",\"stream_id\":%llu,\"offset\":%llu,\"length\":%zu,"
                "\"fin\":%s}",
                (unsigned long long)fr->u.stream.stream_id, (unsigned long long)fr->u.stream.offset,
                fr->u.stream.len, fr->u.stream.fin ? "true" : "false");
        return;
    }
    switch (t) {
    case QK_FT_PADDING: fprintf(f, "{\"frame_type\":\"padding\"}"); return;
    case QK_FT_PING: fprintf(f, "{\"frame_type\":\"ping\"}"); return;
    case QK_FT_ACK:
    case QK_FT_ACK_ECN: {
        fprintf(f, "{\"frame_type\":\"ack\",\"ack_delay\":%llu,\"acked_ranges\":[",
                (unsigned long long)fr->u.ack.ack_delay);
        qk_ack_iter it;
        qk_ack_iter_init(&it, &fr->u.ack);
        uint64_t lo, hi;
        for (int i = 0; i < 32 && qk_ack_iter_next(&it, &lo, &hi); i++)
            fprintf(f, "%s[%llu,%llu]", i ? "," : "", (unsigned long long)lo,
                    (unsigned long long)hi);
        fprintf(f, "]");
        if (fr->u.ack.has_ecn)
            fprintf(f, ",\"ect0\":%llu,\"ect1\":%llu,\"ce\":%llu",
                    (unsigned long long)fr->u.ack.ect0, (unsigned long long)fr->u.ack.ect1,
                    (unsigned long long)fr->u.ack.ce);
        fprintf(f, "}");
        return;
    }
    case QK_FT_CRYPTO:
        fprintf(f, "{\"frame_type\":\"crypto\",\"offset\":%llu,\"length\":%zu}",
                (unsigned long long)fr->u.crypto.offset, fr->u.crypto.len);
        return;
    case QK_FT_MAX_DATA:
        fprintf(f, "{\"frame_type\":\"max_data\",\"maximum\":%llu}",
                (unsigned long long)fr->u.max.max);
        return;
    case QK_FT_MAX_STREAM_DATA:
        fprintf(f, "{\"frame_type\":\"max_stream_data\",\"stream_id\":%llu,\"maximum\":%llu}",
                (unsigned long long)fr->u.stream_max.stream_id,
                (unsigned long long)fr->u.stream_max.max);
        return;
    case QK_FT_CONNECTION_CLOSE:
    case QK_FT_CONNECTION_CLOSE_APP:
        fprintf(f,
                "{\"frame_type\":\"connection_close\",\"error_space\":\"%s\",\"error_code\":%llu}",
                t == QK_FT_CONNECTION_CLOSE ? "transport" : "application",
                (unsigned long long)fr->u.close.error_code);
        return;
    case QK_FT_HANDSHAKE_DONE: fprintf(f, "{\"frame_type\":\"handshake_done\"}"); return;
    case QK_FT_NEW_CONNECTION_ID:
        fprintf(f, "{\"frame_type\":\"new_connection_id\",\"sequence_number\":%llu}",
                (unsigned long long)fr->u.new_cid.seq);
        return;
    case QK_FT_DATAGRAM:
    case QK_FT_DATAGRAM_LEN:
        fprintf(f, "{\"frame_type\":\"datagram\",\"length\":%zu}", fr->u.datagram.len);
        return;
    case QK_FT_IMMEDIATE_ACK: fprintf(f, "{\"frame_type\":\"immediate_ack\"}"); return;
    case QK_FT_ACK_FREQUENCY: /* draft-ietf-quic-ack-frequency-12 §4 */
        fprintf(f,
                "{\"frame_type\":\"ack_frequency\",\"sequence_number\":%llu,"
                "\"ack_eliciting_threshold\":%llu,\"request_max_ack_delay\":%.3f,"
                "\"reordering_threshold\":%llu}",
                (unsigned long long)fr->u.ack_frequency.seq,
                (unsigned long long)fr->u.ack_frequency.ack_eliciting_threshold,
                (double)fr->u.ack_frequency.request_max_ack_delay_us / 1e3,
                (unsigned long long)fr->u.ack_frequency.reordering_threshold);
        return;
    default:
        fprintf(f, "{\"frame_type\":\"unknown\",\"raw_frame_type\":%llu}", (unsigned long long)t);
    }
}

void qk_qlog_packet(qk_conn *c, bool sent, qk_pkt_type type, uint64_t pn, size_t len,
                    const uint8_t *payload, size_t payload_len, qk_time now)
{
    FILE *f = c->qlog;
    if (!f) return;
    fprintf(f,
            "\x1e{\"time\":%.3f,\"name\":\"transport:packet_%s\",\"data\":{\"header\":{"
            "\"packet_type\":\"%s\",\"packet_number\":%llu},\"raw\":{\"length\":%zu},"
            "\"frames\":[",
            ms(c, now), sent ? "sent" : "received", pkt_type_name(type), (unsigned long long)pn,
            len);
    size_t off = 0;
    int i = 0;
    while (off < payload_len) {
        qk_frame fr;
        int n = qk_frame_decode(payload + off, payload_len - off, &fr);
        if (n <= 0) break;
        if (i++) fputc(',', f);
        print_frame(f, &fr);
        off += (size_t)n;
    }
    fprintf(f, "]}}\n");
}

void qk_qlog_metrics(qk_conn *c, qk_time now)
{
    if (!c->qlog) return;
    fprintf(c->qlog,
            "\x1e{\"time\":%.3f,\"name\":\"recovery:metrics_updated\",\"data\":{"
            "\"smoothed_rtt\":%.3f,\"min_rtt\":%.3f,\"latest_rtt\":%.3f,\"rtt_variance\":%.3f,"
            "\"congestion_window\":%llu,\"bytes_in_flight\":%llu}}\n",
            ms(c, now), c->rtt.smoothed_rtt_ns / 1e6, c->rtt.min_rtt_ns / 1e6,
            c->rtt.latest_rtt_ns / 1e6, c->rtt.rttvar_ns / 1e6,
            (unsigned long long)c->cc.cwnd_bytes,
            (unsigned long long)qk_recovery_bytes_in_flight(&c->rec));
}

void qk_qlog_event(qk_conn *c, const char *name, const char *data_json, qk_time now)
{
    if (!c->qlog) return;
    fprintf(c->qlog, "\x1e{\"time\":%.3f,\"name\":\"%s\",\"data\":%s}\n", ms(c, now), name,
            data_json);
}

void qk_qlog_params(qk_conn *c, bool local, const qk_tparams *tp, qk_time now)
{
    if (!c->qlog) return;
    /* draft-ietf-quic-qlog-quic-events: transport:parameters_set */
    fprintf(c->qlog,
            "\x1e{\"time\":%.3f,\"name\":\"transport:parameters_set\",\"data\":{"
            "\"owner\":\"%s\",\"max_idle_timeout\":%llu,\"max_udp_payload_size\":%llu,"
            "\"initial_max_data\":%llu,\"initial_max_stream_data_bidi_local\":%llu,"
            "\"initial_max_stream_data_bidi_remote\":%llu,"
            "\"initial_max_stream_data_uni\":%llu,\"initial_max_streams_bidi\":%llu,"
            "\"initial_max_streams_uni\":%llu,\"ack_delay_exponent\":%llu,"
            "\"max_ack_delay\":%llu,\"active_connection_id_limit\":%llu,"
            "\"max_datagram_frame_size\":%llu}}\n",
            ms(c, now), local ? "local" : "remote", (unsigned long long)tp->max_idle_timeout_ms,
            (unsigned long long)tp->max_udp_payload_size, (unsigned long long)tp->initial_max_data,
            (unsigned long long)tp->initial_max_stream_data_bidi_local,
            (unsigned long long)tp->initial_max_stream_data_bidi_remote,
            (unsigned long long)tp->initial_max_stream_data_uni,
            (unsigned long long)tp->initial_max_streams_bidi,
            (unsigned long long)tp->initial_max_streams_uni,
            (unsigned long long)tp->ack_delay_exponent, (unsigned long long)tp->max_ack_delay_ms,
            (unsigned long long)tp->active_connection_id_limit,
            (unsigned long long)tp->max_datagram_frame_size);
}

void qk_qlog_lost(qk_conn *c, qk_pn_space space, uint64_t pn)
{
    if (!c->qlog) return;
    static const char *const names[] = {"initial", "handshake", "1RTT"};
    fprintf(c->qlog,
            "\x1e{\"time\":%.3f,\"name\":\"recovery:packet_lost\",\"data\":{\"header\":{"
            "\"packet_type\":\"%s\",\"packet_number\":%llu}}}\n",
            ms(c, c->qlog_last), (unsigned)space < 3 ? names[space] : "unknown",
            (unsigned long long)pn);
}
