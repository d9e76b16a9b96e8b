/* SPDX-License-Identifier: MIT */
/* Internal defaults of the libev I/O loop (see include/quack/io.h). */
#ifndef QK_IO_LOOP_H
#define QK_IO_LOOP_H

#include <quack/io.h>

#define QK_IO_LOOP_RECV_BATCH  32     /**< default datagrams per recvmmsg */
#define QK_IO_LOOP_SEND_BATCH  16     /**< default entries per poll_send */
#define QK_IO_LOOP_BUF_BYTES   65535u /**< default bytes per buffer */
#define QK_IO_LOOP_SPLIT_MAX   64     /**< datagrams per on_datagrams call */
#define QK_IO_LOOP_READ_ROUNDS 8      /**< recv batches per readiness event */
#define QK_IO_LOOP_MAX_SIGNALS 4
#define QK_IO_LOOP_MAX_SOCKETS 1025 /**< qk_io_loop_new's socket + up to 1024 added */

#endif
