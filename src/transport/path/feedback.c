/* SPDX-License-Identifier: MIT */
/* Lost-feedback detection: see feedback.h. */
#include "transport/path/feedback.h"

void qk_feedback_init(qk_feedback *f)
{
    f->wait_since = QK_TIME_INFINITE;
    f->degraded = false;
    f->failed = false;
}

void qk_feedback_on_sent(qk_feedback *f, qk_time now)
{
    if (f->wait_since == QK_TIME_INFINITE) f->wait_since = now;
}

void qk_feedback_on_ack(qk_feedback *f, bool outstanding, qk_time now)
{
    /* Feedback arrived: a new silence (if any) starts now. */
    f->wait_since = outstanding ? now : QK_TIME_INFINITE;
    f->degraded = false;
}

void qk_feedback_on_idle(qk_feedback *f)
{
    f->wait_since = QK_TIME_INFINITE;
    f->degraded = false;
}

qk_time qk_feedback_degraded_at(const qk_feedback *f, const qk_feedback_params *p)
{
    if (f->wait_since == QK_TIME_INFINITE || f->degraded || f->failed) return QK_TIME_INFINITE;
    /* RFC 9000 §13.2.1: the peer acknowledges within max_ack_delay; the ACK
     * is due one RTT plus that after the packet left. One more RTT of
     * silence is the signal. */
    return f->wait_since + 2 * p->srtt_ns + p->max_ack_delay_ns;
}

qk_time qk_feedback_failed_at(const qk_feedback *f, const qk_feedback_params *p)
{
    if (f->wait_since == QK_TIME_INFINITE || f->failed || !p->failed_ns) return QK_TIME_INFINITE;
    qk_time limit = p->failed_ns;
    /* Never below 3 PTOs: the span RFC 9000 §10.1 gives an idle timeout. */
    if (limit < 3 * p->pto_ns) limit = 3 * p->pto_ns;
    return f->wait_since + limit;
}

qk_time qk_feedback_next_timeout(const qk_feedback *f, const qk_feedback_params *p)
{
    qk_time d = qk_feedback_degraded_at(f, p), x = qk_feedback_failed_at(f, p);
    return d < x ? d : x;
}

qk_feedback_state qk_feedback_check(qk_feedback *f, const qk_feedback_params *p, qk_time now)
{
    if (now >= qk_feedback_failed_at(f, p)) {
        f->failed = true;
        return QK_FEEDBACK_FAILED;
    }
    if (now >= qk_feedback_degraded_at(f, p)) {
        f->degraded = true;
        return QK_FEEDBACK_DEGRADED;
    }
    return QK_FEEDBACK_OK;
}
