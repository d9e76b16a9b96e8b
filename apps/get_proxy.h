/* SPDX-License-Identifier: MIT */
/* `quack get --proxy`: the download's QUIC connection runs inside a
 * CONNECT-UDP session (RFC 9298) of an HTTP/3 connection to a quack tunnel
 * server (the MASQUE way). The outer connection is the tunnel client's
 * carrier (tunnel_h3.c: the same CONNECT-UDP request and proxy-authorization
 * proof); the inner endpoint is driven here without a socket: its datagrams
 * go out as HTTP Datagrams (RFC 9297) and the HTTP Datagrams that come back
 * are fed to it as UDP datagrams from the target. */
#ifndef QK_APPS_GET_PROXY_H
#define QK_APPS_GET_PROXY_H

#include <quack/driver.h>
#include <quack/quack.h>

#include <stdio.h>

typedef struct get_proxy_opts {
    const char *url;         /* --proxy https://HOST:PORT */
    const char *secret_file; /* --proxy-secret-file FILE */
    const char *pin;         /* --proxy-pin HEX */
    bool insecure;           /* --proxy-insecure */
} get_proxy_opts;

/* The --proxy options at argv[*i]: -1 when a is none of them, 0 when taken,
 * 2 on bad usage (explained on stderr). */
int get_proxy_opt(get_proxy_opts *o, int argc, char **argv, int *i);

/* Their lines of `quack get --help`. */
void get_proxy_usage(FILE *f);

/* The inner (proxied) endpoint, as the caller runs it. */
typedef struct get_proxy_inner {
    qk_config cfg;  /* its configuration; max_udp_payload_bytes is set to what fits */
    qk_addr target; /* the URL's server (the tunnel server's --udp-to) */
    /* The endpoint exists (the proxy session is up): start the connection. */
    int (*start)(void *ctx, qk_endpoint *ep, qk_time now);
    qk_io_ep_app_fn app;       /* its events, as qk_io_ep_driver calls it */
    void (*finish)(void *ctx); /* the loop ended: let go of the connection */
    void *ctx;
} get_proxy_inner;

/* Run the download through the proxy until in->app breaks *loop (set while
 * the loop runs) or the proxy fails. Returns 0, or 1 when the proxy could
 * not be used (said on stderr: unreachable, refused the secret, ...). */
int get_proxy_run(const get_proxy_opts *o, get_proxy_inner *in, qk_io_loop **loop);

#endif
