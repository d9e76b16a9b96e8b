/* A connection's deadlines (absolute, QK_TIME_INFINITE when off). Not a
 * public header. */
#ifndef QK_TRANSPORT_CONN_TIMERS_H
#define QK_TRANSPORT_CONN_TIMERS_H

#include <quack/quack.h>

/* The connection's part: qk_conn.timers. */
typedef struct qk_conn_timers {
    qk_time idle_timeout_ns;
    qk_time handshake_deadline; /* QK_TIME_INFINITE once the handshake completed */
    qk_time idle_deadline;
    qk_time close_deadline; /* end of closing/draining */
    qk_time last_ack_eliciting_sent;
    qk_time last_rx_ns;    /* last packet from the peer (keep-alive) */
    qk_time keep_alive_ns; /* qk_config.keep_alive_ns, 0 = off */
} qk_conn_timers;

#endif
