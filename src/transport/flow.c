/* Flow control, RFC 9000 §4, with receive-window auto-tuning. */
#include "transport/flow.h"

void qk_flow_budget_init(qk_flow_budget *b, uint64_t capacity_bytes)
{
    b->capacity_bytes = capacity_bytes;
    b->used_bytes = 0;
}

bool qk_flow_budget_grant(qk_flow_budget *b, uint64_t delta_bytes)
{
    if (delta_bytes > b->capacity_bytes - b->used_bytes) return false;
    b->used_bytes += delta_bytes;
    return true;
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
    return 2 * (rx->max_data_bytes - rx->consumed_bytes) < rx->window_bytes;
}

/* Double the window if the last credit went in under 2 RTTs: the window,
 * not the application, limits the transfer (ngtcp2/quinn-style auto-tune). */
static void autotune(qk_flow_rx *rx, qk_time now, qk_time srtt_ns)
{
    if (!rx->autotune || !rx->updated_once || srtt_ns == 0) return;
    if (now - rx->last_update_ns >= 2 * srtt_ns) return;
    if (rx->window_bytes >= rx->max_window_bytes) return;
    uint64_t next =
        rx->window_bytes > rx->max_window_bytes / 2 ? rx->max_window_bytes : 2 * rx->window_bytes;
    uint64_t delta = next - rx->window_bytes;
    if (rx->budget && !qk_flow_budget_grant(rx->budget, delta)) return; /* memory refused */
    rx->granted_bytes += rx->budget ? delta : 0;
    rx->window_bytes = next;
}

uint64_t qk_flow_rx_update(qk_flow_rx *rx, qk_time now, qk_time srtt_ns)
{
    autotune(rx, now, srtt_ns);
    uint64_t limit = rx->consumed_bytes + rx->window_bytes;
    if (limit > rx->max_data_bytes) rx->max_data_bytes = limit; /* RFC 9000 §4.1: never shrink */
    rx->last_update_ns = now;
    rx->updated_once = true;
    return rx->max_data_bytes;
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
