/* SPDX-License-Identifier: MIT */
/* The endpoint glue's loop callbacks (driver.c), for tests that move its
 * datagrams without a socket; programs use qk_io_ep_driver_loop_new. */
#ifndef QK_IO_DRIVER_INT_H
#define QK_IO_DRIVER_INT_H

#include <quack/driver.h>

/** The callbacks qk_io_ep_driver_loop_new gives the loop; ctx is the driver. */
extern const qk_io_driver_ops qk_io_ep_driver_ops;

#endif
