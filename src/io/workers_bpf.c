/* SPDX-License-Identifier: MIT */
/* Load and attach src/io/steer_kern.bpf with libbpf (workers_bpf.h). */
#include "io/workers_bpf.h"

#include <quack/common.h>

#include <stdlib.h>

#ifdef QK_HAVE_BPF
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/socket.h>

#include "steer_bpf.inc" /* qk_steer_bpf_obj: the object file's bytes */

struct qk_steer_bpf {
    struct bpf_object *obj;
};

static int silent(enum libbpf_print_level level, const char *fmt, va_list ap)
{
    (void)level;
    (void)fmt;
    (void)ap;
    return 0; /* the caller says why in one line */
}

/* The socket map and the configuration of a loaded object. */
static int fill_maps(struct bpf_object *obj, const int *fds, unsigned n, const qk_steer_where *w)
{
    int socks = bpf_object__find_map_fd_by_name(obj, "qk_steer_socks");
    int cfg = bpf_object__find_map_fd_by_name(obj, "qk_steer_cfg");
    if (socks < 0 || cfg < 0) return -1;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t fd = (uint64_t)fds[i];
        if (bpf_map_update_elem(socks, &i, &fd, BPF_ANY)) return -1;
    }
    uint32_t zero = 0;
    return bpf_map_update_elem(cfg, &zero, w, BPF_ANY) ? -1 : 0;
}

int qk_steer_bpf_attach(const int *fds, unsigned n, const qk_steer_where *w, qk_steer_bpf **out,
                        const char **why)
{
    *out = NULL;
    libbpf_set_print(silent);
    qk_steer_bpf *b = calloc(1, sizeof *b);
    if (!b) return QK_ERR_NOMEM;
    b->obj = bpf_object__open_mem(qk_steer_bpf_obj, sizeof qk_steer_bpf_obj, NULL);
    *why = "the BPF object could not be opened";
    if (!b->obj) goto fail;
    *why = "the kernel refused the SK_REUSEPORT program (needs CAP_BPF or root)";
    if (bpf_object__load(b->obj)) goto fail;
    *why = "the worker sockets could not be put in the BPF socket map";
    if (fill_maps(b->obj, fds, n, w)) goto fail;
    struct bpf_program *p = bpf_object__find_program_by_name(b->obj, "qk_steer");
    int pfd = p ? bpf_program__fd(p) : -1;
    *why = "SO_ATTACH_REUSEPORT_EBPF failed";
    if (pfd < 0 || setsockopt(fds[0], SOL_SOCKET, SO_ATTACH_REUSEPORT_EBPF, &pfd, sizeof pfd))
        goto fail;
    *why = NULL;
    *out = b;
    return 0;
fail:
    qk_steer_bpf_free(b);
    return QK_ERR_IO;
}

void qk_steer_bpf_free(qk_steer_bpf *b)
{
    if (!b) return;
    bpf_object__close(b->obj);
    free(b);
}

#else /* built without libbpf or clang's BPF target */

int qk_steer_bpf_attach(const int *fds, unsigned n, const qk_steer_where *w, qk_steer_bpf **out,
                        const char **why)
{
    (void)fds;
    (void)n;
    (void)w;
    *out = NULL;
    *why = "built without libbpf";
    return QK_ERR_UNSUPPORTED;
}

void qk_steer_bpf_free(qk_steer_bpf *b)
{
    (void)b;
}
#endif
