/* SPDX-License-Identifier: MIT */
/* Lost-feedback detection: a path that has packets outstanding
 * and hears no acknowledgement for too long is first "degraded" (about one
 * RTT past when an ACK was due) and then "failed" (past a configured limit,
 * never below 3x the un-backed-off PTO). Timing only: the connection feeds
 * it sends and ACKs and acts on what qk_feedback_check says. A slow drip of
 * CC-bypass packets keeps packets outstanding but brings no ACK, so it does
 * not hide a dead path (the loss-detection timers alone would wait for the
 * idle timeout). */
#ifndef QK_TRANSPORT_PATH_FEEDBACK_H
#define QK_TRANSPORT_PATH_FEEDBACK_H

#include <stdbool.h>
#include <stdint.h>

#include <quack/common.h>

typedef struct qk_feedback {
    qk_time wait_since; /**< outstanding without any ACK since; INFINITE = none outstanding */
    bool degraded;      /**< degraded already reported for this silence */
    bool failed;        /**< failure reported (final) */
} qk_feedback;

/** What the path's timing says at a given time. */
typedef enum qk_feedback_state {
    QK_FEEDBACK_OK = 0,
    QK_FEEDBACK_DEGRADED = 1, /**< newly degraded (reported once per silence) */
    QK_FEEDBACK_FAILED = 2,   /**< newly failed (reported once) */
} qk_feedback_state;

/** Timing inputs: the path's RTT estimate and the limits. */
typedef struct qk_feedback_params {
    qk_time srtt_ns;          /**< smoothed RTT */
    qk_time max_ack_delay_ns; /**< the peer's max_ack_delay */
    qk_time pto_ns;           /**< the un-backed-off PTO (RFC 9002 §6.2.1) */
    qk_time failed_ns;        /**< qk_config.path_failed_ns, 0 = never fail */
} qk_feedback_params;

/** Nothing outstanding. Never fails. */
void qk_feedback_init(qk_feedback *f);

/** An ack-eliciting packet left at now. Never fails. */
void qk_feedback_on_sent(qk_feedback *f, qk_time now);

/** An ACK arrived at now; outstanding = ack-eliciting packets still in
 * flight after it. Ends the silence. Never fails. */
void qk_feedback_on_ack(qk_feedback *f, bool outstanding, qk_time now);

/** Nothing is outstanding any more (all acked, lost or discarded). */
void qk_feedback_on_idle(qk_feedback *f);

/** When the path counts as degraded: one smoothed RTT past when an ACK was
 * due (wait_since + srtt + max_ack_delay); INFINITE when nothing waits or it
 * was reported. */
qk_time qk_feedback_degraded_at(const qk_feedback *f, const qk_feedback_params *p);

/** When the path counts as failed: wait_since + max(failed_ns, 3 x pto);
 * INFINITE when nothing waits, failure is off or was reported. */
qk_time qk_feedback_failed_at(const qk_feedback *f, const qk_feedback_params *p);

/** The earlier of the two deadlines (for the connection's timer). */
qk_time qk_feedback_next_timeout(const qk_feedback *f, const qk_feedback_params *p);

/** Report a newly reached state at now (each at most once per silence;
 * FAILED wins over DEGRADED). Returns a qk_feedback_state. */
qk_feedback_state qk_feedback_check(qk_feedback *f, const qk_feedback_params *p, qk_time now);

#endif
