/* SPDX-License-Identifier: MIT */
/* A static-file site over HTTP/3: the request handling of `quack serve
 * --root` (index.html for a directory, 403/404/405 as text/plain, a
 * Content-Type by extension, HEAD, a `server: quack` header), shared with
 * `quack tunnel --masquerade` so that both answer byte for byte alike. */
#ifndef QK_APPS_H3_SITE_H
#define QK_APPS_H3_SITE_H

#include <quack/h3.h>

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#define H3_SITE_MAX_PATH_BYTES 2048u

typedef struct h3_site_req {
    struct h3_site_req *next;
    qk_h3 *h3;
    uint64_t sid;
    char method[8];
    char path[H3_SITE_MAX_PATH_BYTES];
    bool bad;      /* path too long or missing pseudo-headers */
    bool answered; /* 405 sent when the headers came */
} h3_site_req;

typedef struct h3_site {
    const char *who; /* log prefix ("quack serve") */
    char root[PATH_MAX];
    size_t root_len;
    bool no_root;         /* no directory: every GET is a 404 */
    bool quiet;           /* no line per request */
    h3_site_req *reqs;    /* requests whose headers arrived, not yet answered */
    h3_site_req *sending; /* file responses submitted, not yet handed to QUIC in full */
    uint64_t served, errors, unfinished; /* served: responses sent in full */
} h3_site;

/* The qk_h3 callbacks of a site; user is the h3_site. */
extern const qk_h3_callbacks h3_site_callbacks;

/* root: the document root (realpath'd; must be a directory), or NULL for a
 * site without files. Returns 0, or -1 with errno. */
int h3_site_init(h3_site *s, const char *who, const char *root);
/* The connection of h went: forget its requests not answered yet. */
void h3_site_drop_conn(h3_site *s, qk_h3 *h);
/* Free the requests left (after the qk_h3 layers were freed). */
void h3_site_release(h3_site *s);

#endif
