/* SPDX-License-Identifier: MIT */
/* A server's key kept in a state directory (see cli_identity.h). */
#include "cli_identity.h"

#include <quack/cert.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int cli_state_dir_default(char *out, size_t cap)
{
    const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
    int n;
    if (xdg && xdg[0] == '/') /* XDG Base Directory: relative paths are ignored */
        n = snprintf(out, cap, "%s/quack", xdg);
    else if (geteuid() == 0)
        n = snprintf(out, cap, "/var/lib/quack");
    else if (home && home[0])
        n = snprintf(out, cap, "%s/.local/state/quack", home);
    else
        return -1;
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

int cli_identity_paths(const char *dir, char *cert, size_t cert_cap, char *key, size_t key_cap)
{
    int a = snprintf(cert, cert_cap, "%s/" CLI_IDENTITY_CERT, dir);
    int b = snprintf(key, key_cap, "%s/" CLI_IDENTITY_KEY, dir);
    return a < 0 || b < 0 || (size_t)a >= cert_cap || (size_t)b >= key_cap ? -1 : 0;
}

/* mkdir -p with mode 0700 for what it creates. Returns 0 or -1 (errno set). */
static int make_dirs(const char *dir)
{
    char p[1024];
    if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *s = p + 1;; s++) {
        bool end = !*s;
        if (*s != '/' && !end) continue;
        *s = 0;
        if (mkdir(p, 0700) && errno != EEXIST) return -1;
        if (end) break;
        *s = '/';
    }
    struct stat st;
    if (stat(dir, &st)) return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

/* Create dir, lock DIR/.lock (exclusive; released when *fd is closed). */
static int lock_dir(const char *who, const char *dir, int *fd)
{
    char lock[1100];
    if (make_dirs(dir)) {
        fprintf(stderr, "%s: state directory %s: cannot create it: %m\n", who, dir);
        return -1;
    }
    snprintf(lock, sizeof lock, "%s/.lock", dir);
    *fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (*fd < 0 || flock(*fd, LOCK_EX)) {
        fprintf(stderr, "%s: state directory %s: cannot lock %s: %m\n", who, dir, lock);
        if (*fd >= 0) close(*fd);
        return -1;
    }
    return 0;
}

/* Write a pair (key first: a certificate is only ever next to its key). */
static int generate(const char *who, const char *dir, const char *cert, const char *key,
                    const char *name, unsigned days)
{
    int rc = qk_cert_generate_files(name, (int64_t)time(NULL) - 3600, days, cert, key);
    if (rc)
        fprintf(stderr, "%s: state directory %s: cannot write a key (error %d): %m\n", who, dir,
                rc);
    return rc ? -1 : 0;
}

int cli_identity_ensure(const char *who, const char *dir, char *cert, char *key, size_t cap)
{
    int fd;
    if (cli_identity_paths(dir, cert, cap, key, cap)) {
        fprintf(stderr, "%s: state directory %s: path too long\n", who, dir);
        return -1;
    }
    if (lock_dir(who, dir, &fd)) return -1;
    bool have_cert = access(cert, F_OK) == 0, have_key = access(key, F_OK) == 0;
    int rc = 0;
    if (have_cert != have_key) {
        fprintf(stderr,
                "%s: state directory %s has %s but not %s: restore it, or remove both to make a "
                "new key (clients then need the new pin)\n",
                who, dir, have_cert ? CLI_IDENTITY_CERT : CLI_IDENTITY_KEY,
                have_cert ? CLI_IDENTITY_KEY : CLI_IDENTITY_CERT);
        rc = -1;
    } else if (!have_cert) {
        rc = generate(who, dir, cert, key, "localhost", CLI_IDENTITY_DAYS);
        if (!rc) fprintf(stderr, "%s: made a new key in %s (kept for later starts)\n", who, dir);
    } else if (access(key, R_OK)) {
        fprintf(stderr, "%s: state directory %s: cannot read %s: %m\n", who, dir, key);
        rc = -1;
    }
    close(fd);
    return rc;
}

int cli_identity_write(const char *who, const char *dir, const char *name, unsigned days,
                       bool force)
{
    char cert[1100], key[1100];
    int fd;
    if (cli_identity_paths(dir, cert, sizeof cert, key, sizeof key)) {
        fprintf(stderr, "%s: %s: path too long\n", who, dir);
        return -1;
    }
    if (lock_dir(who, dir, &fd)) return -1;
    int rc = 0;
    if (!force && (access(key, F_OK) == 0 || access(cert, F_OK) == 0)) {
        fprintf(stderr,
                "%s: %s already holds a key (%s): servers using it keep their pin. Give --force "
                "to replace it (clients then need the new pin)\n",
                who, dir, key);
        rc = 1;
    } else {
        rc = generate(who, dir, cert, key, name, days);
    }
    close(fd);
    return rc;
}
