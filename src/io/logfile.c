/* SPDX-License-Identifier: MIT */
/* Log files for the library's log writers (qk_config.qlog_*, .keylog): the
 * library formats, this file (the I/O layer, used by the CLI and the
 * simulator) opens and writes. */
#include <quack/io.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

static FILE *keylog_fp; /* one per process, like SSLKEYLOGFILE itself */

/* NAME.sqlog, or NAME.2.sqlog ... when a connection with the same original
 * DCID already wrote one (a replayed Initial, or another worker thread):
 * created exclusively, so none overwrites another. */
static void *qlog_open(void *ctx, const char *name)
{
    char path[4096];
    for (int k = 1; k < 100; k++) {
        int n = k == 1 ? snprintf(path, sizeof path, "%s/%s.sqlog", (const char *)ctx, name)
                       : snprintf(path, sizeof path, "%s/%s.%d.sqlog", (const char *)ctx, name, k);
        if (n < 0 || (size_t)n >= sizeof path) return NULL;
        FILE *f = fopen(path, "wx");
        if (f || errno != EEXIST) return f;
    }
    return NULL;
}

static void qlog_write(void *handle, const char *data, size_t len)
{
    fwrite(data, 1, len, handle);
}

static void qlog_close(void *handle)
{
    fclose(handle);
}

static void keylog_line(void *ctx, const char *line)
{
    FILE *f = ctx;
    fputs(line, f);
    fputc('\n', f);
    fflush(f); /* a capture tool may read it while we run */
}

int qk_io_log_files(qk_config *cfg, const char *qlog_dir, const char *keylog_path)
{
    if (!cfg) return QK_ERR_INVALID_ARG;
    if (qlog_dir && *qlog_dir) {
        cfg->qlog_open = qlog_open;
        cfg->qlog_write = qlog_write;
        cfg->qlog_close = qlog_close;
        cfg->qlog_ctx = (void *)qlog_dir;
    }
    if (!keylog_path || !*keylog_path) keylog_path = getenv("SSLKEYLOGFILE");
    if (keylog_path && *keylog_path) {
        if (!keylog_fp && !(keylog_fp = fopen(keylog_path, "a"))) return QK_ERR_IO;
        cfg->keylog = keylog_line;
        cfg->keylog_ctx = keylog_fp;
    }
    return 0;
}
