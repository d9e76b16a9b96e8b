/* SPDX-License-Identifier: MIT */
/* Fuzz a yamux session: the input is split in two: the bytes a peer sends
 * (fed in random-sized pieces), interleaved with local actions. Invariants:
 * no crash or leak, streams and buffered bytes stay within the configured
 * bounds, and after an error only GoAway goes out. */
#include <quack/yamux.h>
#include <stdlib.h>

#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    qk_yamux_config cfg;
    qk_yamux_config_default(&cfg);
    cfg.server = data[0] & 1;
    cfg.fixed_window = data[0] & 2;
    cfg.accept_backlog = 8;
    cfg.max_streams = 16;
    qk_yamux *s;
    CHECK(qk_yamux_new(&cfg, 0, &s) == 0);
    static uint8_t out[1 << 16], buf[4096];
    size_t off = 1;
    qk_time now = 0;
    while (off < size) {
        uint8_t op = data[off++];
        size_t n = (size_t)(op >> 3) * 7 + 1;
        if (n > size - off) n = size - off;
        switch (op & 7) {
        case 0:
        case 1:
        case 2: { /* peer bytes */
            long rc = qk_yamux_recv(s, data + off, n, now);
            CHECK(rc == (long)n || rc < 0);
            off += n;
            break;
        }
        case 3: { /* accept and read everything */
            uint32_t sid;
            while (qk_yamux_accept(s, &sid) == 0) {
            }
            qk_yamux_event ev;
            while (qk_yamux_poll_event(s, &ev)) {
                bool fin;
                if (ev.type == QK_YAMUX_EV_READABLE)
                    while (qk_yamux_read(s, ev.stream_id, buf, sizeof buf, &fin) > 0) {
                    }
            }
            break;
        }
        case 4: { /* open and write */
            uint32_t sid;
            if (!qk_yamux_open(s, &sid))
                qk_yamux_write(s, sid, buf, n * 100 < sizeof buf ? n * 100 : sizeof buf, op & 8);
            break;
        }
        case 5: qk_yamux_send(s, out, sizeof out, now); break;
        case 6:
            now += (qk_time)n * QK_NS_PER_MS;
            qk_yamux_on_timeout(s, now);
            break;
        default: qk_yamux_go_away(s, op >> 3); break;
        }
        qk_yamux_stats st;
        qk_yamux_stats_get(s, &st);
        CHECK(st.streams_alive <= cfg.max_streams);
    }
    qk_yamux_del(s);
    return 0;
}
