/* SPDX-License-Identifier: MIT */
/* Internal limits of the UDP socket layer (see include/quack/io.h). */
#ifndef QK_IO_UDP_H
#define QK_IO_UDP_H

#include <quack/io.h>
#include <sys/socket.h>

/** Most messages handed to one recvmmsg()/sendmmsg(). */
#define QK_UDP_BATCH_MAX 64

/** Most segments in one UDP_SEGMENT message (the kernel's UDP_MAX_SEGMENTS
 * was 64 before Linux 6.x raised it; use the lower, portable bound). */
#define QK_UDP_GSO_MAX_SEGMENTS 64

/** Largest UDP payload in one IPv4 message: 65535 - 20 (IP) - 8 (UDP). */
#define QK_UDP_GSO_MAX_BYTES 65507u

/** Signature of sendmmsg(2). */
typedef int (*qk_udp_sendmmsg_fn)(int fd, struct mmsghdr *msgs, unsigned n, int flags);

/**
 * Fault-injection hook for tests: make u call fn instead of sendmmsg(2)
 * (NULL restores it), e.g. to simulate a socket that would block mid-batch.
 * No error codes.
 */
void qk_udp_set_sendmmsg(qk_udp *u, qk_udp_sendmmsg_fn fn);

#endif
