/* SPDX-License-Identifier: MIT */
/* qlog (draft-ietf-quic-qlog-main-schema / -quic-events) as JSON-SEQ: one
 * file per connection, each record prefixed by RS (0x1e) and ended by LF. */
#include "transport/conn/conn.h"

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
    c->qlog.last = now;
    return (double)(now - c->qlog.start) / 1e6;
}

/* The records are formatted with stdio into a cookie stream whose only
 * output is the caller's qlog_write (qk_config): no file, no I/O here. */
static ssize_t cookie_write(void *cookie, const char *buf, size_t len)
{
    const qk_conn *c = cookie;
    c->cfg->qlog_write(c->qlog.handle, buf, len);
    return (ssize_t)len;
}

static int cookie_close(void *cookie)
{
    qk_conn *c = cookie;
    if (c->cfg->qlog_close) c->cfg->qlog_close(c->qlog.handle);
    c->qlog.handle = NULL;
    return 0;
}

void qk_qlog_open(qk_conn *c, qk_time now)
{
    const qk_config *cfg = c->cfg;
    if (!cfg->qlog_open || !cfg->qlog_write) return;
    char name[2 * QK_MAX_CID_LEN + 16], hex[2 * QK_MAX_CID_LEN + 1];
    for (size_t i = 0; i < c->cids.odcid.len; i++)
        snprintf(hex + 2 * i, 3, "%02x", c->cids.odcid.b[i]);
    hex[2 * c->cids.odcid.len] = 0;
    snprintf(name, sizeof name, "%s_%s", hex, c->is_server ? "server" : "client");
    c->qlog.handle = cfg->qlog_open(cfg->qlog_ctx, name);
    if (!c->qlog.handle) return;
    c->qlog.file =
        fopencookie(c, "w", (cookie_io_functions_t){.write = cookie_write, .close = cookie_close});
    if (!c->qlog.file) {
        if (cfg->qlog_close) cfg->qlog_close(c->qlog.handle);
        c->qlog.handle = NULL;
        return;
    }
    c->qlog.start = now;
    fprintf(c->qlog.file,
            "\x1e{\"qlog_version\":\"0.3\",\"qlog_format\":\"JSON-SEQ\",\"title\":\"quack\","
            "\"trace\":{\"vantage_point\":{\"type\":\"%s\"},\"common_fields\":{\"ODCID\":\"%s\","
            "\"time_format\":\"relative\",\"reference_time\":0}}}\n",
            c->is_server ? "server" : "client", hex);
}

void qk_qlog_close(qk_conn *c)
{
    /* Freed while open (its endpoint is deleted, e.g. the process stops on
     * SIGTERM): the trace still ends with connection_closed. */
    if (c->qlog.file && c->state < QK_CONN_CLOSING) {
        c->close.err = QK_ERR_CLOSED;
        c->close.code = 0;
        c->close.app = c->close.remote = false;
        snprintf(c->close.reason, sizeof c->close.reason,
                 "endpoint freed with the connection open");
    }
    if (c->qlog.file && c->state != QK_CONN_CLOSED) qk_qlog_closed(c, c->qlog.last);
    if (c->qlog.file) fclose(c->qlog.file); /* flushes, then cookie_close */
    c->qlog.file = NULL;
}

/* qlog frame_type names (draft-ietf-quic-qlog-quic-events-03 §7.1, and the
 * ack-frequency draft's qlog section for its two frames). */
static const char *frame_name(uint64_t t)
{
    switch (t) {
    case QK_FT_PADDING: return "padding";
    case QK_FT_PING: return "ping";
    case QK_FT_ACK:
    case QK_FT_ACK_ECN: return "ack";
    case QK_FT_RESET_STREAM: return "reset_stream";
    case QK_FT_STOP_SENDING: return "stop_sending";
    case QK_FT_CRYPTO: return "crypto";
    case QK_FT_NEW_TOKEN: return "new_token";
    case QK_FT_MAX_DATA: return "max_data";
    case QK_FT_MAX_STREAM_DATA: return "max_stream_data";
    case QK_FT_MAX_STREAMS_BIDI:
    case QK_FT_MAX_STREAMS_UNI: return "max_streams";
    case QK_FT_DATA_BLOCKED: return "data_blocked";
    case QK_FT_STREAM_DATA_BLOCKED: return "stream_data_blocked";
    case QK_FT_STREAMS_BLOCKED_BIDI:
    case QK_FT_STREAMS_BLOCKED_UNI: return "streams_blocked";
    case QK_FT_NEW_CONNECTION_ID: return "new_connection_id";
    case QK_FT_RETIRE_CONNECTION_ID: return "retire_connection_id";
    case QK_FT_PATH_CHALLENGE: return "path_challenge";
    case QK_FT_PATH_RESPONSE: return "path_response";
    case QK_FT_CONNECTION_CLOSE:
    case QK_FT_CONNECTION_CLOSE_APP: return "connection_close";
    case QK_FT_HANDSHAKE_DONE: return "handshake_done";
    case QK_FT_DATAGRAM:
    case QK_FT_DATAGRAM_LEN: return "datagram";
    case QK_FT_ACK_FREQUENCY: return "ack_frequency";
    case QK_FT_IMMEDIATE_ACK: return "immediate_ack";
    default: return qk_frame_is_stream(t) ? "stream" : NULL;
    }
}

static void print_ack_fields(FILE *f, const qk_frame *fr)
{
    fprintf(f, ",\"ack_delay\":%llu,\"acked_ranges\":[", (unsigned long long)fr->u.ack.ack_delay);
    qk_ack_iter it;
    qk_ack_iter_init(&it, &fr->u.ack);
    uint64_t lo, hi;
    for (int i = 0; i < 32 && qk_ack_iter_next(&it, &lo, &hi); i++)
        fprintf(f, "%s[%llu,%llu]", i ? "," : "", (unsigned long long)lo, (unsigned long long)hi);
    fprintf(f, "]");
    if (fr->u.ack.has_ecn)
        fprintf(f, ",\"ect0\":%llu,\"ect1\":%llu,\"ce\":%llu", (unsigned long long)fr->u.ack.ect0,
                (unsigned long long)fr->u.ack.ect1, (unsigned long long)fr->u.ack.ce);
}

/* The fields of frames with fields (the name is already written). */
static void print_frame_fields(FILE *f, const qk_frame *fr)
{
    typedef unsigned long long ull;
    uint64_t t = fr->type;
    if (qk_frame_is_stream(t)) {
        fprintf(f, ",\"stream_id\":%llu,\"offset\":%llu,\"length\":%zu,\"fin\":%s",
                (ull)fr->u.stream.stream_id, (ull)fr->u.stream.offset, fr->u.stream.len,
                fr->u.stream.fin ? "true" : "false");
        return;
    }
    switch (t) {
    case QK_FT_ACK:
    case QK_FT_ACK_ECN: print_ack_fields(f, fr); return;
    case QK_FT_RESET_STREAM:
        fprintf(f, ",\"stream_id\":%llu,\"error_code\":%llu,\"final_size\":%llu",
                (ull)fr->u.reset_stream.stream_id, (ull)fr->u.reset_stream.app_error,
                (ull)fr->u.reset_stream.final_size);
        return;
    case QK_FT_STOP_SENDING:
        fprintf(f, ",\"stream_id\":%llu,\"error_code\":%llu", (ull)fr->u.stop_sending.stream_id,
                (ull)fr->u.stop_sending.app_error);
        return;
    case QK_FT_CRYPTO:
        fprintf(f, ",\"offset\":%llu,\"length\":%zu", (ull)fr->u.crypto.offset, fr->u.crypto.len);
        return;
    case QK_FT_NEW_TOKEN: fprintf(f, ",\"token\":{\"length\":%zu}", fr->u.new_token.len); return;
    case QK_FT_MAX_STREAMS_BIDI:
    case QK_FT_MAX_STREAMS_UNI:
    case QK_FT_STREAMS_BLOCKED_BIDI:
    case QK_FT_STREAMS_BLOCKED_UNI:
        fprintf(f, ",\"stream_type\":\"%s\",\"%s\":%llu",
                t == QK_FT_MAX_STREAMS_UNI || t == QK_FT_STREAMS_BLOCKED_UNI ? "unidirectional"
                                                                             : "bidirectional",
                t == QK_FT_MAX_STREAMS_BIDI || t == QK_FT_MAX_STREAMS_UNI ? "maximum" : "limit",
                (ull)fr->u.max.max);
        return;
    case QK_FT_MAX_DATA: fprintf(f, ",\"maximum\":%llu", (ull)fr->u.max.max); return;
    case QK_FT_DATA_BLOCKED: fprintf(f, ",\"limit\":%llu", (ull)fr->u.max.max); return;
    case QK_FT_MAX_STREAM_DATA:
    case QK_FT_STREAM_DATA_BLOCKED:
        fprintf(f, ",\"stream_id\":%llu,\"%s\":%llu", (ull)fr->u.stream_max.stream_id,
                t == QK_FT_MAX_STREAM_DATA ? "maximum" : "limit", (ull)fr->u.stream_max.max);
        return;
    default: break;
    }
    /* connection IDs, paths, close, DATAGRAM, ACK_FREQUENCY: print_frame_more */
}

static void print_frame_more(FILE *f, const qk_frame *fr)
{
    typedef unsigned long long ull;
    switch (fr->type) {
    case QK_FT_NEW_CONNECTION_ID:
        fprintf(f, ",\"sequence_number\":%llu,\"length\":%zu", (ull)fr->u.new_cid.seq,
                (size_t)fr->u.new_cid.cid_len);
        return;
    case QK_FT_RETIRE_CONNECTION_ID:
        fprintf(f, ",\"sequence_number\":%llu", (ull)fr->u.retire_cid.seq);
        return;
    case QK_FT_PATH_CHALLENGE:
    case QK_FT_PATH_RESPONSE:
        fprintf(f, ",\"data\":\"");
        for (int i = 0; i < 8; i++) fprintf(f, "%02x", fr->u.path.data[i]);
        fprintf(f, "\"");
        return;
    case QK_FT_CONNECTION_CLOSE:
    case QK_FT_CONNECTION_CLOSE_APP:
        fprintf(f, ",\"error_space\":\"%s\",\"error_code\":%llu",
                fr->type == QK_FT_CONNECTION_CLOSE ? "transport" : "application",
                (ull)fr->u.close.error_code);
        return;
    case QK_FT_DATAGRAM:
    case QK_FT_DATAGRAM_LEN: fprintf(f, ",\"length\":%zu", fr->u.datagram.len); return;
    case QK_FT_ACK_FREQUENCY: /* draft-ietf-quic-ack-frequency-12 §4 */
        fprintf(f,
                ",\"sequence_number\":%llu,\"ack_eliciting_threshold\":%llu,"
                "\"request_max_ack_delay\":%.3f,\"reordering_threshold\":%llu",
                (ull)fr->u.ack_frequency.seq, (ull)fr->u.ack_frequency.ack_eliciting_threshold,
                (double)fr->u.ack_frequency.request_max_ack_delay_us / 1e3,
                (ull)fr->u.ack_frequency.reordering_threshold);
        return;
    default: return;
    }
}

static void print_frame(FILE *f, const qk_frame *fr)
{
    const char *name = frame_name(fr->type);
    if (!name) {
        fprintf(f, "{\"frame_type\":\"unknown\",\"raw_frame_type\":%llu}",
                (unsigned long long)fr->type);
        return;
    }
    fprintf(f, "{\"frame_type\":\"%s\"", name);
    print_frame_fields(f, fr);
    print_frame_more(f, fr);
    fprintf(f, "}");
}

void qk_qlog_packet(qk_conn *c, bool sent, qk_pkt_type type, uint64_t pn, size_t len,
                    const uint8_t *payload, size_t payload_len, qk_time now)
{
    FILE *f = c->qlog.file;
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
    if (!c->qlog.file) return;
    fprintf(c->qlog.file,
            "\x1e{\"time\":%.3f,\"name\":\"recovery:metrics_updated\",\"data\":{"
            "\"smoothed_rtt\":%.3f,\"min_rtt\":%.3f,\"latest_rtt\":%.3f,\"rtt_variance\":%.3f,"
            "\"congestion_window\":%llu,\"bytes_in_flight\":%llu,\"pacing_rate\":%llu}}\n",
            ms(c, now), c->rtt.smoothed_rtt_ns / 1e6, c->rtt.min_rtt_ns / 1e6,
            c->rtt.latest_rtt_ns / 1e6, c->rtt.rttvar_ns / 1e6,
            (unsigned long long)c->cc.cwnd_bytes,
            (unsigned long long)qk_recovery_bytes_in_flight(&c->rec),
            (unsigned long long)c->cc.pacing_rate_bytes_per_s * 8); /* qlog: bits per second */
}

void qk_qlog_event(qk_conn *c, const char *name, const char *data_json, qk_time now)
{
    if (!c->qlog.file) return;
    fprintf(c->qlog.file, "\x1e{\"time\":%.3f,\"name\":\"%s\",\"data\":%s}\n", ms(c, now), name,
            data_json);
}

void qk_qlog_params(qk_conn *c, bool local, const qk_tparams *tp, qk_time now)
{
    if (!c->qlog.file) return;
    /* draft-ietf-quic-qlog-quic-events: transport:parameters_set */
    fprintf(c->qlog.file,
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
    if (!c->qlog.file) return;
    static const char *const names[] = {"initial", "handshake", "1RTT"};
    fprintf(c->qlog.file,
            "\x1e{\"time\":%.3f,\"name\":\"recovery:packet_lost\",\"data\":{\"header\":{"
            "\"packet_type\":\"%s\",\"packet_number\":%llu}}}\n",
            ms(c, c->qlog.last), (unsigned)space < 3 ? names[space] : "unknown",
            (unsigned long long)pn);
}

/* A JSON string body: quotes, backslashes and control characters escaped. */
static void print_json_string(FILE *f, const char *s)
{
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
}

void qk_qlog_closed(qk_conn *c, qk_time now)
{
    if (!c->qlog.file) return;
    /* draft-ietf-quic-qlog-quic-events-03 §5.3: connectivity:connection_closed */
    fprintf(c->qlog.file,
            "\x1e{\"time\":%.3f,\"name\":\"connectivity:connection_closed\",\"data\":{",
            ms(c, now));
    fprintf(c->qlog.file, "\"owner\":\"%s\",\"%s\":%llu,\"internal_code\":%d,\"reason\":\"",
            c->close.remote ? "remote" : "local",
            c->close.app ? "application_code" : "connection_code",
            (unsigned long long)c->close.code, c->close.err);
    print_json_string(c->qlog.file, c->close.reason);
    fprintf(c->qlog.file, "\"}}\n");
    fflush(c->qlog.file);
}
