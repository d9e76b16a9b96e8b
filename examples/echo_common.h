/* SPDX-License-Identifier: MIT */
/* Shared by echo_server.c and echo_client.c: the glue that drives a quack
 * endpoint from a UDP socket and the library's libev loop, using only the
 * public API (<quack/quack.h>, <quack/io.h>).
 *
 * The endpoint is sans-I/O: it never reads a clock or touches a socket. The
 * loop (qk_io_loop) owns the socket and the timer and calls the four
 * qk_io_driver_ops below; after every step the application drains the
 * endpoint's events (app_step). */
#ifndef ECHO_COMMON_H
#define ECHO_COMMON_H

#include <quack/io.h>
#include <quack/quack.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>

#define ECHO_ALPN "echo"

/* The application's reaction to events: drain qk_endpoint_poll_event(). */
typedef void (*echo_app_fn)(void *app, qk_endpoint *ep, qk_time now);

typedef struct echo_driver {
    qk_endpoint *ep;
    echo_app_fn app_fn;
    void *app;
} echo_driver;

/* qk_config.rng: the stack asks the application for randomness. */
static void echo_rng(void *ctx, uint8_t *buf, size_t len)
{
    (void)ctx;
    while (len) {
        ssize_t r = getrandom(buf, len, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) abort();
        buf += r;
        len -= (size_t)r;
    }
}

static void drv_on_datagrams(void *ctx, qk_datagram *d, size_t n, qk_time now)
{
    echo_driver *drv = ctx;
    for (size_t i = 0; i < n; i++) qk_endpoint_recv(drv->ep, &d[i], now);
    drv->app_fn(drv->app, drv->ep, now);
}

static size_t drv_poll_send(void *ctx, qk_datagram *out, size_t max, qk_time now)
{
    echo_driver *drv = ctx;
    drv->app_fn(drv->app, drv->ep, now); /* queue stream data before packing */
    return qk_endpoint_send(drv->ep, out, max, now);
}

static qk_time drv_next_timeout(void *ctx)
{
    return qk_endpoint_next_timeout(((echo_driver *)ctx)->ep);
}

static void drv_on_timeout(void *ctx, qk_time now)
{
    echo_driver *drv = ctx;
    qk_endpoint_on_timeout(drv->ep, now);
    drv->app_fn(drv->app, drv->ep, now);
}

static const qk_io_driver_ops echo_driver_ops = {
    .on_datagrams = drv_on_datagrams,
    .poll_send = drv_poll_send,
    .next_timeout = drv_next_timeout,
    .on_timeout = drv_on_timeout,
    /* .on_error (optional): ICMP errors of a QK_UDP_RECVERR socket */
};

/* Run the loop over socket u until the application or a signal breaks it.
 * *loop_out is set before the loop starts (the application breaks it). */
static int echo_run(qk_udp *u, echo_driver *drv, qk_io_loop **loop_out)
{
    qk_io_loop *loop;
    int rc = qk_io_loop_new(u, &echo_driver_ops, drv, NULL, &loop);
    if (rc) {
        fprintf(stderr, "qk_io_loop_new: %s\n", qk_strerror(rc));
        return rc;
    }
    qk_io_loop_stop_on_signal(loop, SIGINT);
    qk_io_loop_stop_on_signal(loop, SIGTERM);
    *loop_out = loop;
    rc = qk_io_loop_run(loop);
    qk_io_loop_del(loop);
    *loop_out = NULL;
    return rc;
}

#endif
