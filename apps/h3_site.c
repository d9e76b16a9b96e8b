/* SPDX-License-Identifier: MIT */
/* A static-file site over HTTP/3 (h3_site.h): what `quack serve --root`
 * answers and what `quack tunnel --masquerade` shows strangers, one code.
 * Bodies are pulled (qk_h3_respond_pull): read from the open file with pread
 * as the connection has room for them, so a client that stops reading makes
 * the server hold no more than the credit it granted; paths are resolved
 * with realpath() and must stay under the root. */
#include "h3_site.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* An open file being served: read at the offsets the HTTP/3 layer asks for. */
typedef struct body_file {
    int fd;
} body_file;

static long file_read(void *ctx, uint64_t off, uint8_t *buf, size_t len)
{
    body_file *f = ctx;
    for (;;) {
        ssize_t r = pread(f->fd, buf, len, (off_t)off);
        if (r < 0 && errno == EINTR) continue;
        return r; /* 0 (the file shrank) or -1: the response is reset */
    }
}

static void file_close(void *ctx)
{
    body_file *f = ctx;
    close(f->fd);
    free(f);
}

static h3_site_req *req_find(h3_site *s, qk_h3 *h, uint64_t sid, bool unlink_it)
{
    for (h3_site_req **pp = &s->reqs; *pp; pp = &(*pp)->next)
        if ((*pp)->h3 == h && (*pp)->sid == sid) {
            h3_site_req *r = *pp;
            if (unlink_it) *pp = r->next;
            return r;
        }
    return NULL;
}

void h3_site_drop_conn(h3_site *s, qk_h3 *h)
{
    for (h3_site_req **pp = &s->reqs; *pp;) {
        if ((*pp)->h3 == h) {
            h3_site_req *r = *pp;
            *pp = r->next;
            free(r);
        } else {
            pp = &(*pp)->next;
        }
    }
}

static void respond_error(h3_site *s, qk_h3 *h, uint64_t sid, unsigned status, const char *body);

static void s_headers(void *user, qk_h3 *h, uint64_t sid, const qk_h3_header *hd, size_t n,
                      bool fin)
{
    (void)fin;
    h3_site *s = user;
    h3_site_req *r = req_find(s, h, sid, false);
    if (!r) {
        r = calloc(1, sizeof *r);
        if (!r) return; /* answered 500 at the end of the request */
        r->h3 = h;
        r->sid = sid;
        r->next = s->reqs;
        s->reqs = r;
    }
    bool have_path = false;
    for (size_t i = 0; i < n; i++) {
        if (hd[i].name_len == 7 && !memcmp(hd[i].name, ":method", 7)) {
            size_t l =
                hd[i].value_len < sizeof r->method - 1 ? hd[i].value_len : sizeof r->method - 1;
            memcpy(r->method, hd[i].value, l);
            r->method[l] = 0;
        } else if (hd[i].name_len == 5 && !memcmp(hd[i].name, ":path", 5)) {
            if (hd[i].value_len >= sizeof r->path) {
                r->bad = true;
                continue;
            }
            memcpy(r->path, hd[i].value, hd[i].value_len);
            r->path[hd[i].value_len] = 0;
            have_path = true;
        }
    }
    if (!have_path) r->bad = true;
    /* A method other than GET or HEAD is answered at once (405), body or not:
     * a CONNECT never ends its request, and any web server answers it. */
    if (strcmp(r->method, "GET") && strcmp(r->method, "HEAD") && !r->answered) {
        r->answered = true;
        respond_error(s, h, sid, 405, "405 Method Not Allowed\n");
        if (!s->quiet)
            fprintf(stderr, "%s %s stream %llu\n", r->method, have_path ? r->path : "-",
                    (unsigned long long)sid);
    }
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Percent-decode the path (query dropped). Returns false for a NUL byte, a
 * bad escape, a path not starting with '/', or a ".." segment. */
static bool decode_path(const char *in, char *out, size_t cap)
{
    size_t o = 0;
    if (in[0] != '/') return false;
    for (size_t i = 0; in[i] && in[i] != '?' && in[i] != '#'; i++) {
        char c = in[i];
        if (c == '%') {
            int hi = hexval(in[i + 1]), lo = hi < 0 ? -1 : hexval(in[i + 2]);
            if (lo < 0) return false;
            c = (char)(hi * 16 + lo);
            i += 2;
            if (c == 0) return false;
        }
        if (o + 1 >= cap) return false;
        out[o++] = c;
    }
    out[o] = 0;
    /* Refuse any ".." segment outright (realpath below also confines symlinks). */
    for (const char *p = out; (p = strstr(p, "..")); p += 2)
        if ((p == out || p[-1] == '/') && (p[2] == 0 || p[2] == '/')) return false;
    return true;
}

/* Content-Type by file extension (RFC 9110 §8.3). Browsers sniff images, but
 * refuse a script or stylesheet of another type under "nosniff" (Fetch
 * §3.5), and a module script of any non-JavaScript type. */
static const struct {
    const char *ext, *type;
} mime_tab[] = {
    {".html", "text/html; charset=utf-8"},
    {".htm", "text/html; charset=utf-8"},
    {".txt", "text/plain; charset=utf-8"},
    {".css", "text/css"},
    {".js", "text/javascript"},
    {".mjs", "text/javascript"},
    {".json", "application/json"},
    {".xml", "application/xml"},
    {".wasm", "application/wasm"},
    {".png", "image/png"},
    {".gif", "image/gif"},
    {".jpg", "image/jpeg"},
    {".jpeg", "image/jpeg"},
    {".webp", "image/webp"},
    {".avif", "image/avif"},
    {".svg", "image/svg+xml"},
    {".ico", "image/x-icon"},
    {".woff", "font/woff"},
    {".woff2", "font/woff2"},
    {".mp4", "video/mp4"},
    {".webm", "video/webm"},
    {".mp3", "audio/mpeg"},
    {".pdf", "application/pdf"},
};

static const char *mime_type(const char *path)
{
    const char *dot = strrchr(path, '.');
    if (dot && !strchr(dot, '/'))
        for (size_t i = 0; i < sizeof mime_tab / sizeof mime_tab[0]; i++)
            if (!strcasecmp(dot, mime_tab[i].ext)) return mime_tab[i].type;
    return "application/octet-stream";
}

static void respond_error(h3_site *s, qk_h3 *h, uint64_t sid, unsigned status, const char *body)
{
    qk_h3_header ct = qk_h3_hdr("content-type", "text/plain");
    char len[24];
    snprintf(len, sizeof len, "%zu", strlen(body));
    qk_h3_header hd[3] = {ct, qk_h3_hdr("content-length", len), qk_h3_hdr("server", "quack")};
    qk_h3_respond(h, sid, status, hd, 3, (const uint8_t *)body, strlen(body), NULL, NULL);
    s->errors++;
}

/* Resolve the request to a regular file under the root and open it.
 * Returns the fd, or -status (403, 404) when refused. */
static int open_under_root(h3_site *s, const char *decoded, char *full, size_t cap)
{
    if (s->no_root) return -404;
    char want[PATH_MAX + H3_SITE_MAX_PATH_BYTES];
    snprintf(want, sizeof want, "%s%s", s->root, decoded);
    char real[PATH_MAX];
    if (!realpath(want, real)) return errno == EACCES ? -403 : -404;
    /* The resolved path must be the root or below it (symlinks included). */
    if (strncmp(real, s->root, s->root_len) || (real[s->root_len] != '/' && real[s->root_len] != 0))
        return -403;
    struct stat st;
    if (stat(real, &st)) return -404;
    if (S_ISDIR(st.st_mode)) {
        strncat(real, "/index.html", sizeof real - strlen(real) - 1);
        if (stat(real, &st) || !S_ISREG(st.st_mode)) return -404;
    }
    if (!S_ISREG(st.st_mode)) return -404;
    snprintf(full, cap, "%s", real);
    int fd = open(real, O_RDONLY | O_CLOEXEC);
    return fd >= 0 ? fd : (errno == EACCES ? -403 : -404);
}

/* Returns true when a file response was submitted (r then waits in
 * s->sending until on_response_done says how it ended). */
static bool serve_file(h3_site *s, qk_h3 *h, h3_site_req *r)
{
    bool head = !strcmp(r->method, "HEAD");
    if (strcmp(r->method, "GET") && !head) {
        respond_error(s, h, r->sid, 405, "405 Method Not Allowed\n");
        return false;
    }
    char decoded[H3_SITE_MAX_PATH_BYTES], full[PATH_MAX];
    if (r->bad || !decode_path(r->path, decoded, sizeof decoded)) {
        respond_error(s, h, r->sid, 403, "403 Forbidden\n");
        return false;
    }
    int fd = open_under_root(s, decoded, full, sizeof full);
    if (fd < 0) {
        respond_error(s, h, r->sid, (unsigned)-fd,
                      fd == -403 ? "403 Forbidden\n" : "404 Not Found\n");
        return false;
    }
    struct stat st;
    body_file *f = calloc(1, sizeof *f);
    if (!f || fstat(fd, &st)) {
        close(fd);
        free(f);
        respond_error(s, h, r->sid, 500, "500 Internal Server Error\n");
        return false;
    }
    f->fd = fd;
    char len[24];
    snprintf(len, sizeof len, "%llu", (unsigned long long)st.st_size);
    qk_h3_header hd[3] = {qk_h3_hdr("content-type", mime_type(full)),
                          qk_h3_hdr("content-length", len), qk_h3_hdr("server", "quack")};
    int rc = head ? qk_h3_respond(h, r->sid, 200, hd, 3, NULL, 0, NULL, NULL)
                  : qk_h3_respond_pull(h, r->sid, 200, hd, 3, (uint64_t)st.st_size, file_read,
                                       file_close, f);
    if (rc || head) file_close(f);
    return rc == 0;
}

/* One line per request, with the priority the response is sent at (the
 * HTTP/3 layer sets the stream's urgency from the request's `priority`
 * header and PRIORITY_UPDATE frames, RFC 9218). */
static void serve_log(qk_h3 *h, const h3_site_req *r)
{
    qk_h3_priority p = {QK_H3_DEFAULT_URGENCY, false};
    qk_h3_stream_priority(h, r->sid, &p);
    fprintf(stderr, "%s %s stream %llu u=%u%s\n", r->method, r->path, (unsigned long long)r->sid,
            p.urgency, p.incremental ? ",i" : "");
}

static void s_end(void *user, qk_h3 *h, uint64_t sid)
{
    h3_site *s = user;
    h3_site_req *r = req_find(s, h, sid, true);
    if (r && r->answered) {
        free(r);
        return;
    }
    if (!r) {
        respond_error(s, h, sid, 500, "500 Internal Server Error\n");
        return;
    }
    bool sending = serve_file(s, h, r);
    if (!s->quiet) serve_log(h, r);
    if (!sending) {
        free(r);
        return;
    }
    r->next = s->sending;
    s->sending = r;
}

/* A file response ended: served only when all of it reached QUIC. */
static void s_done(void *user, qk_h3 *h, uint64_t sid, bool complete)
{
    h3_site *s = user;
    for (h3_site_req **pp = &s->sending; *pp; pp = &(*pp)->next) {
        h3_site_req *r = *pp;
        if (r->h3 != h || r->sid != sid) continue;
        *pp = r->next;
        if (complete) {
            s->served++;
        } else {
            s->unfinished++;
            fprintf(stderr,
                    "%s: %s %s stream %llu: response not finished (stream reset or "
                    "connection closed first)\n",
                    s->who, r->method, r->path, (unsigned long long)sid);
        }
        free(r);
        return;
    }
}

static void s_reset(void *user, qk_h3 *h, uint64_t sid, uint64_t code)
{
    (void)code;
    h3_site *s = user;
    free(req_find(s, h, sid, true));
}

const qk_h3_callbacks h3_site_callbacks = {s_headers, NULL, s_end, s_reset, NULL, s_done, NULL};

int h3_site_init(h3_site *s, const char *who, const char *root)
{
    memset(s, 0, sizeof *s);
    s->who = who;
    if (!root) { /* no directory: every path is a 404 */
        s->no_root = true;
        return 0;
    }
    if (!realpath(root, s->root)) return -1;
    struct stat st;
    if (stat(s->root, &st) || !S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    s->root_len = strlen(s->root);
    if (s->root_len == 1) s->root_len = 0; /* "/": every path is below it */
    return 0;
}

void h3_site_release(h3_site *s)
{
    for (h3_site_req **l = &s->reqs; l; l = l == &s->reqs ? &s->sending : NULL)
        while (*l) {
            h3_site_req *r = *l;
            *l = r->next;
            free(r);
        }
}
