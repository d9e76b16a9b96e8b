/* SPDX-License-Identifier: MIT */
/* Flow control, RFC 9000 §4, with receive-window auto-tuning. */
#include "transport/streams/flow.h"

void qk_flow_budget_init(qk_flow_budget *b, uint64_t capacity_bytes)
{
    b->capacity_bytes = capacity_bytes;
    b->used_bytes = 0;
    b->peak_used_bytes = 0;
    b->starved = false;
}

bool qk_flow_budget_grant(qk_flow_budget *b, uint64_t delta_bytes)
{
    if (delta_bytes > b->capacity_bytes - b->used_bytes) return false;
    b->used_bytes += delta_bytes;
    if (b->used_bytes > b->peak_used_bytes) b->peak_used_bytes = b->used_bytes;
    return true;
}

void qk_flow_budget_charge(qk_flow_budget *b, uint64_t delta_bytes)
{
    b->used_bytes += delta_bytes;
    if (b->used_bytes > b->peak_used_bytes) b->peak_used_bytes = b->used_bytes;
}

void qk_flow_budget_release(qk_flow_budget *b, uint64_t delta_bytes)
{
    b->used_bytes = delta_bytes > b->used_bytes ? 0 : b->used_bytes - delta_bytes;
}

void qk_flow_rx_init(qk_flow_rx *rx, uint64_t initial_window_bytes, uint64_t max_window_bytes,
                     bool autotune, qk_flow_budget *budget)
{
    *rx = (qk_flow_rx){0};
    rx->max_data_bytes = initial_window_bytes;
    rx->window_bytes = initial_window_bytes;
    rx->initial_window_bytes = initial_window_bytes;
    rx->peak_credit_bytes = initial_window_bytes;
    rx->sent_limit_bytes = initial_window_bytes;
    rx->max_window_bytes =
        max_window_bytes > initial_window_bytes ? max_window_bytes : initial_window_bytes;
    rx->autotune = autotune;
    rx->budget = budget;
}

void qk_flow_rx_free(qk_flow_rx *rx)
{
    if (rx->budget && rx->granted_bytes) qk_flow_budget_release(rx->budget, rx->granted_bytes);
    rx->granted_bytes = 0;
}

int qk_flow_rx_on_data(qk_flow_rx *rx, uint64_t offset_end, uint64_t *new_bytes)
{
    /* RFC 9000 §4.1: data beyond the advertised limit is FLOW_CONTROL_ERROR. */
    if (offset_end > rx->max_data_bytes) return QK_ERR_FLOW_CONTROL;
    uint64_t grew = offset_end > rx->received_bytes ? offset_end - rx->received_bytes : 0;
    rx->received_bytes += grew;
    if (new_bytes) *new_bytes = grew;
    return 0;
}

int qk_flow_rx_add(qk_flow_rx *rx, uint64_t new_bytes)
{
    if (new_bytes > rx->max_data_bytes - rx->received_bytes) return QK_ERR_FLOW_CONTROL;
    rx->received_bytes += new_bytes;
    return 0;
}

int qk_flow_rx_on_consumed(qk_flow_rx *rx, uint64_t bytes)
{
    if (bytes > rx->received_bytes - rx->consumed_bytes) return QK_ERR_INVALID_ARG;
    rx->consumed_bytes += bytes;
    return 0;
}

bool qk_flow_rx_should_update(const qk_flow_rx *rx)
{
    /* RFC 9000 §4.2: send updates early enough to avoid blocking the peer;
     * here when less than half a window of credit remains. */
    uint64_t credit = rx->max_data_bytes - rx->consumed_bytes;
    if (rx->early_updates) return 4 * credit < 3 * rx->window_bytes;
    return 2 * credit < rx->window_bytes;
}

bool qk_flow_rx_credit_nearly_used(const qk_flow_rx *rx, uint64_t limit_bytes,
                                   uint64_t received_bytes)
{
    uint64_t left = limit_bytes > received_bytes ? limit_bytes - received_bytes : 0;
    return left <= rx->window_bytes / 8; /* 8 * left <= window, without overflow */
}

/* Budget needed beyond the initial window to cover window_bytes and the
 * credit already advertised (which cannot be taken back, RFC 9000 §4.1). */
static uint64_t budget_need(const qk_flow_rx *rx, uint64_t window_bytes)
{
    uint64_t outstanding = rx->max_data_bytes - rx->consumed_bytes;
    uint64_t promised = window_bytes > outstanding ? window_bytes : outstanding;
    return promised > rx->initial_window_bytes ? promised - rx->initial_window_bytes : 0;
}

/* Return budget held beyond what is still promised. */
static void settle_budget(qk_flow_rx *rx)
{
    if (!rx->budget) return;
    uint64_t need = budget_need(rx, rx->window_bytes);
    if (rx->granted_bytes <= need) return;
    qk_flow_budget_release(rx->budget, rx->granted_bytes - need);
    rx->granted_bytes = need;
}

/* Grow the window to at most target_bytes, as far as the budget allows
 * (it may grant part). Returns true when the window grew. */
static bool grow_to(qk_flow_rx *rx, uint64_t target_bytes)
{
    if (target_bytes > rx->max_window_bytes) target_bytes = rx->max_window_bytes;
    if (target_bytes <= rx->window_bytes) return false;
    if (rx->budget) {
        uint64_t need = budget_need(rx, target_bytes);
        uint64_t extra = need > rx->granted_bytes ? need - rx->granted_bytes : 0;
        uint64_t avail = rx->budget->capacity_bytes - rx->budget->used_bytes;
        if (extra > avail) { /* memory refused in part: grow by what is left */
            uint64_t cut = extra - avail;
            if (target_bytes - rx->window_bytes <= cut) return false;
            target_bytes -= cut;
            extra = avail;
        }
        if (extra && !qk_flow_budget_grant(rx->budget, extra)) return false;
        rx->granted_bytes += extra;
    }
    rx->window_bytes = target_bytes;
    rx->grows++;
    return true;
}

/* The RTT the window is sized for: the path's base RTT (plus a little for
 * ACK and processing delay), not a queue-inflated srtt — a window sized by
 * the full-queue srtt is what keeps that queue full. */
static qk_time sizing_rtt(const qk_flow_rx *rx, qk_time srtt_ns)
{
    if (!rx->min_rtt_ns) return srtt_ns;
    qk_time slack =
        rx->min_rtt_ns / 4 < QK_FLOW_RTT_SLACK_NS ? rx->min_rtt_ns / 4 : QK_FLOW_RTT_SLACK_NS;
    qk_time base = rx->min_rtt_ns + slack;
    return base < srtt_ns ? base : srtt_ns;
}

/* Keep the delivery checkpoints at least half a sizing RTT apart. */
static void checkpoint(qk_flow_rx *rx, qk_time now, qk_time rtt_ns)
{
    if (now - rx->cp_ns[1] < rtt_ns / 2) return;
    rx->prev_rate_rtt_bytes = rx->last_rate_rtt_bytes;
    rx->cp_ns[0] = rx->cp_ns[1];
    rx->cp_received_bytes[0] = rx->cp_received_bytes[1];
    rx->cp_consumed_bytes[0] = rx->cp_consumed_bytes[1];
    rx->cp_ns[1] = now;
    rx->cp_received_bytes[1] = rx->received_bytes;
    rx->cp_consumed_bytes[1] = rx->consumed_bytes;
}

/* Delivery since the older checkpoint, scaled to bytes per sizing RTT: the
 * growth of the highest offset received, i.e. what the path carried. Not
 * the bytes read: under random loss a gap holds back every byte behind it
 * until its retransmission arrives (about one RTT), so reads come in bursts
 * out of phase with arrivals, and the smaller of the two over a checkpoint
 * interval (what this used to take) read 5-30 % of the link rate at 1 %
 * loss (100 Mbit/s x 50 ms), which held the window, and the sender, to
 * ~60 % of the link. A slow reader is caught by the kept-up test instead
 * (autotune()), and when it is the limit arrivals follow its reads. */
static double delivery_since(const qk_flow_rx *rx, qk_time now, qk_time rtt)
{
    qk_time dt = now - rx->cp_ns[0];
    uint64_t arrived = rx->received_bytes - rx->cp_received_bytes[0];
    return dt ? (double)arrived * (double)rtt / (double)dt : 0;
}

static double delivery_per_rtt(qk_flow_rx *rx, qk_time now, qk_time srtt_ns)
{
    qk_time rtt = sizing_rtt(rx, srtt_ns);
    checkpoint(rx, now, rtt);
    double rate = delivery_since(rx, now, rtt);
    rx->last_rate_rtt_bytes = rate;
    return rate;
}

/* Received and readable but not read: what the reader is behind by. */
static uint64_t unread(const qk_flow_rx *rx)
{
    uint64_t buffered = rx->received_bytes - rx->consumed_bytes;
    return buffered > rx->held_bytes ? buffered - rx->held_bytes : 0;
}

/* Did the credit go fast, by the configured rule? Updates the EPOCH state. */
static bool credit_went_fast(qk_flow_rx *rx, qk_time now, qk_time srtt_ns)
{
    uint64_t w = rx->window_bytes, used;
    if (rx->rule == QK_FLOW_RULE_EPOCH) {
        /* quic-go: only judge once more than half the window was consumed in
         * this epoch; fast if that fraction f took less than 4 * f * srtt. */
        used = rx->consumed_bytes - rx->epoch_start_consumed_bytes;
        if (2 * used <= w) return false;
        qk_time dt = now - rx->epoch_start_ns;
        bool fast = (double)dt < 4.0 * (double)used / (double)w * (double)srtt_ns;
        rx->epoch_start_ns = now;
        rx->epoch_start_consumed_bytes = rx->consumed_bytes;
        return fast;
    }
    /* quiche / rust-yamux: the previous update's credit (at least half a
     * window consumed since) was used within 2 srtt. Requiring the bytes
     * keeps an early or repeated update (a frame that did not fit, a lost
     * MAX_STREAM_DATA) from counting as fast. */
    used = rx->consumed_bytes - rx->last_update_consumed_bytes;
    return (rx->early_updates ? 4 : 2) * used >= w && now - rx->last_update_ns < 2 * srtt_ns;
}

/* Did the peer use (nearly) all the credit it had? The highest offset
 * received is within an eighth of a window of the limit: the sender was
 * blocked by this window, whatever the reads did. Under loss the
 * credit-went-fast test misses it: the reads stall behind each gap for
 * about an RTT, so the window that blocks the sender is not consumed
 * "fast" (at 1 % loss on 100 Mbit/s x 50 ms it held a 443 KB window for
 * 0.6 s of slow start while the sender waited for credit). */
static bool peer_used_credit(const qk_flow_rx *rx)
{
    /* The limit the peer had: a stream's limit may have moved with the reads
     * (stream.c regrant_credit) before this update runs. */
    return qk_flow_rx_credit_nearly_used(rx, rx->sent_limit_bytes, rx->received_bytes);
}

static void autotune(qk_flow_rx *rx, qk_time now, qk_time srtt_ns)
{
    if (!rx->autotune || !rx->updated_once || srtt_ns == 0) return;
    double prev_rate = rx->prev_rate_rtt_bytes;
    double rate_rtt = delivery_per_rtt(rx, now, srtt_ns);
    bool climbing = rate_rtt >= QK_FLOW_CLIMB * prev_rate && prev_rate > 0;
    double conn_sized = 0;
    if (rx->parent && rx->parent->updated_once)
        conn_sized = QK_FLOW_SIZE_RTTS * delivery_since(rx->parent, now, sizing_rtt(rx, srtt_ns));
    /* The peers' rules alone with plain doubling (docs/experiments/flow-control.md
     * compares them); quack's sizing also grows a window the peer used up. */
    bool fast = credit_went_fast(rx, now, srtt_ns) || (!rx->plain_doubling && peer_used_credit(rx));
    /* A reader that leaves more than a quarter window unread is the limit,
     * not the window: no growth (the backpressure the yamux seed describes).
     * Bytes held behind a gap (a lost packet) cannot be read: not the reader. */
    bool kept_up = 4 * unread(rx) <= rx->window_bytes;
    if (!fast || !kept_up) return;
    rx->period_start_ns = now; /* window-limited: the shrink clock restarts */
    rx->period_start_consumed_bytes = rx->consumed_bytes;
    rx->period_reader_kept_up = false;
    uint64_t w = rx->window_bytes;
    uint64_t target = w > UINT64_MAX / 2 ? UINT64_MAX : 2 * w;
    /* Sizing (quack): grow to at most QK_FLOW_SIZE_RTTS x the delivery per
     * base RTT. While the window limits, about 3/4 of it is delivered per
     * RTT, so it still grows ~1.5x per update (one per ~2/3 RTT); once the
     * link (or a slow reader) is the limit, it stops near 2 x rate x base
     * RTT, where plain doubling overshoots to 4-8x. */
    /* Under loss the window must also cover what waits behind each gap until
     * its retransmission arrives (about one RTT of data at 1 % random loss):
     * the credit for it is spent but cannot be read. The average (not one
     * loss burst's peak: a slow-start overshoot would then leave the window
     * at 3.5 BDP), at most one more RTT of delivery. It takes the same
     * factor as the delivery: the update goes out when half the window is
     * left, and that half must still cover the pipe and what is held (with
     * the held bytes counted once, the window settled near 1.9 BDP at 1 %
     * loss and limited the sender to ~65 % of the link). */
    double held = rx->held_avg_bytes < rate_rtt ? rx->held_avg_bytes : rate_rtt;
    double sized =
        (rx->early_updates ? QK_FLOW_SIZE_RTTS_EARLY : QK_FLOW_SIZE_RTTS) * (rate_rtt + held);
    /* Climbing (slow start: the congestion window is about 2x the delivery
     * of the last RTT and doubles again in the next): up to 2x sized. */
    if (rx->climb_doubling && climbing) sized *= 2;
    if (!rx->plain_doubling && sized < (double)target) target = (uint64_t)sized;
    /* A stream that carries at least half its connection's delivery is
     * sized by the connection's in one step (past the doubling): the last
     * streams of a transfer must carry the link alone before they end (a
     * 10 MB stream ends before doubling from 64 KiB covers a 7.5 MB BDP).
     * The connection window bounds the total; the budget the memory. */
    bool dominant = 2 * QK_FLOW_SIZE_RTTS * rate_rtt >= conn_sized;
    if (!rx->plain_doubling && dominant && conn_sized > (double)target)
        target = (uint64_t)conn_sized;
    grow_to(rx, target);
}

uint64_t qk_flow_rx_update(qk_flow_rx *rx, qk_time now, qk_time srtt_ns)
{
    if (!rx->updated_once) {
        rx->epoch_start_ns = rx->period_start_ns = now;
        rx->epoch_start_consumed_bytes = rx->period_start_consumed_bytes = rx->consumed_bytes;
        rx->cp_ns[0] = rx->cp_ns[1] = now;
        rx->cp_received_bytes[0] = rx->cp_received_bytes[1] = rx->received_bytes;
        rx->cp_consumed_bytes[0] = rx->cp_consumed_bytes[1] = rx->consumed_bytes;
    }
    autotune(rx, now, srtt_ns);
    uint64_t limit = rx->consumed_bytes + rx->window_bytes;
    if (limit > rx->max_data_bytes) rx->max_data_bytes = limit; /* RFC 9000 §4.1: never shrink */
    if (rx->max_data_bytes - rx->consumed_bytes > rx->peak_credit_bytes)
        rx->peak_credit_bytes = rx->max_data_bytes - rx->consumed_bytes;
    rx->last_update_ns = now;
    rx->last_update_consumed_bytes = rx->consumed_bytes;
    rx->sent_limit_bytes = rx->max_data_bytes;
    rx->updated_once = true;
    qk_flow_rx_tick(rx, now, srtt_ns);
    return rx->max_data_bytes;
}

bool qk_flow_rx_tick(qk_flow_rx *rx, qk_time now, qk_time srtt_ns)
{
    if (!rx->updated_once || srtt_ns == 0) {
        settle_budget(rx);
        return false;
    }
    if (rx->autotune) checkpoint(rx, now, sizing_rtt(rx, srtt_ns));
    if (4 * unread(rx) <= rx->window_bytes) rx->period_reader_kept_up = true;
    bool shrank = false;
    rx->held_avg_bytes += ((double)rx->held_bytes - rx->held_avg_bytes) / 8; /* per tick */
    if (now - rx->period_start_ns >= (qk_time)QK_FLOW_DECAY_RTTS * srtt_ns) {
        uint64_t used = rx->consumed_bytes - rx->period_start_consumed_bytes;
        bool unused = 2 * used < rx->window_bytes || !rx->period_reader_kept_up;
        uint64_t floor = rx->initial_window_bytes > rx->min_window_bytes ? rx->initial_window_bytes
                                                                         : rx->min_window_bytes;
        if (unused && rx->window_bytes > floor) {
            uint64_t half = rx->window_bytes / 2;
            rx->window_bytes = half > floor ? half : floor;
            rx->decays++;
            shrank = true;
        }
        rx->period_start_ns = now;
        rx->period_start_consumed_bytes = rx->consumed_bytes;
        rx->period_reader_kept_up = false;
    }
    settle_budget(rx);
    return shrank;
}

bool qk_flow_rx_raise(qk_flow_rx *rx, uint64_t want_bytes)
{
    return grow_to(rx, want_bytes);
}

void qk_flow_tx_init(qk_flow_tx *tx, uint64_t initial_max_bytes)
{
    *tx = (qk_flow_tx){0};
    tx->max_data_bytes = initial_max_bytes;
}

int qk_flow_tx_on_sent(qk_flow_tx *tx, uint64_t bytes)
{
    if (bytes > qk_flow_tx_available(tx)) return QK_ERR_LIMIT;
    tx->sent_bytes += bytes;
    return 0;
}

bool qk_flow_tx_on_max(qk_flow_tx *tx, uint64_t new_max_bytes)
{
    /* RFC 9000 §19.9/§19.10: a limit that does not increase is ignored. */
    if (new_max_bytes <= tx->max_data_bytes) return false;
    tx->max_data_bytes = new_max_bytes;
    return true;
}

bool qk_flow_tx_blocked_pending(const qk_flow_tx *tx, bool has_pending, uint64_t *limit_out)
{
    /* RFC 9000 §4.1: a sender SHOULD send DATA_BLOCKED / STREAM_DATA_BLOCKED
     * when it has data but no credit; once per limit. */
    if (!has_pending || qk_flow_tx_available(tx) > 0) return false;
    if (tx->blocked_sent && tx->blocked_sent_at_bytes == tx->max_data_bytes) return false;
    if (limit_out) *limit_out = tx->max_data_bytes;
    return true;
}

void qk_flow_tx_on_blocked_sent(qk_flow_tx *tx, uint64_t limit_bytes)
{
    tx->blocked_sent = true;
    tx->blocked_sent_at_bytes = limit_bytes;
}

void qk_flow_tx_on_blocked_lost(qk_flow_tx *tx, uint64_t limit_bytes)
{
    if (tx->blocked_sent && tx->blocked_sent_at_bytes == limit_bytes) tx->blocked_sent = false;
}
