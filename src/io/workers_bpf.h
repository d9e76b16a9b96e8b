/* SPDX-License-Identifier: MIT */
/* Kernel steering of the workers' SO_REUSEPORT groups (src/io/steer_kern.bpf,
 * SO_ATTACH_REUSEPORT_EBPF), for src/io/workers.c. */
#ifndef QK_IO_WORKERS_BPF_H
#define QK_IO_WORKERS_BPF_H

#include <stdint.h>

/* Where the worker index is in a DCID, and how our DCIDs start. */
typedef struct qk_steer_where {
    uint32_t n_workers;
    uint32_t idx_off;    /* byte offset of the worker index in the DCID */
    uint32_t first_mask; /* first DCID octet & first_mask == first_val */
    uint32_t first_val;
} qk_steer_where;

/* One loaded program per SO_REUSEPORT group (opaque). */
typedef struct qk_steer_bpf qk_steer_bpf;

/* Load the program, put fds[0..n-1] (the group's sockets, in worker order)
 * in its socket map and attach it to fds[0]. Returns 0 and *out, or a
 * negative QK_ERR_* with *why (a static string) saying what failed:
 * QK_ERR_UNSUPPORTED (built without libbpf) or QK_ERR_IO (the kernel
 * refused: no CAP_BPF, no SK_REUSEPORT support). */
int qk_steer_bpf_attach(const int *fds, unsigned n, const qk_steer_where *w, qk_steer_bpf **out,
                        const char **why);

/* Unload (NULL ok); the group falls back to the kernel's hash. */
void qk_steer_bpf_free(qk_steer_bpf *b);

#endif
