/* SPDX-License-Identifier: MIT */
/* `quack tunnel MODE --config FILE` (see tunnel_config.h): INI through
 * libinih, each KEY = VALUE becoming --KEY VALUE ahead of the command line. */
#include "tunnel_config.h"

#include <ini.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct conf_ctx {
    tun_argv *out;
    const char *path, *mode;
    const char *const *flags;
    int argc; /* the command line, whose options win */
    char **argv;
    FILE *f;
    int line;
    int err; /* 2 once an error was printed */
} conf_ctx;

static int conf_bad(conf_ctx *c, const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "quack tunnel: --config %s line %d: ", c->path, c->line);
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\nRun 'quack tunnel --help' for the options.\n");
    c->err = 2;
    return 0;
}

/* Keep s (malloc'd) to free at the end. Returns s, or NULL (s freed). */
static char *own(tun_argv *a, char *s)
{
    if (!s) return NULL;
    if (a->n_owned == a->cap_owned) {
        size_t cap = a->cap_owned ? 2 * a->cap_owned : 32;
        char **n = realloc(a->owned, cap * sizeof *n);
        if (!n) {
            free(s);
            return NULL;
        }
        a->owned = n;
        a->cap_owned = cap;
    }
    return a->owned[a->n_owned++] = s;
}

/* Append one argument. Returns 0 or -1 (out of memory). */
static int push(tun_argv *a, char *arg, const char *where)
{
    char **v = realloc(a->argv, (size_t)(a->argc + 2) * sizeof *v);
    if (v) a->argv = v;
    const char **w = realloc(a->where, (size_t)(a->argc + 2) * sizeof *w);
    if (w) a->where = w;
    if (!v || !w || !arg) return -1;
    a->argv[a->argc] = arg;
    a->where[a->argc++] = where;
    a->argv[a->argc] = NULL;
    return 0;
}

/* Is --key on the command line? --pin and --insecure replace each other. */
static bool on_command_line(const conf_ctx *c, const char *key)
{
    bool verify = !strcmp(key, "pin") || !strcmp(key, "insecure");
    for (int i = 2; i < c->argc; i++) {
        const char *a = c->argv[i];
        if (a[0] != '-' || a[1] != '-') continue;
        if (!strcmp(a + 2, key) ||
            (verify && (!strcmp(a + 2, "pin") || !strcmp(a + 2, "insecure"))))
            return true;
    }
    return false;
}

static bool is_flag(const conf_ctx *c, const char *key)
{
    for (size_t k = 0; c->flags[k]; k++)
        if (!strcmp(c->flags[k], key)) return true;
    return false;
}

/* yes/true/on/1 -> 1, no/false/off/0 -> 0, else -1. */
static int yes_no(const char *v)
{
    static const char *const yes[] = {"yes", "true", "on", "1"}, *const no[] = {"no", "false",
                                                                                "off", "0"};
    for (size_t i = 0; i < 4; i++) {
        if (!strcmp(v, yes[i])) return 1;
        if (!strcmp(v, no[i])) return 0;
    }
    return -1;
}

static int on_kv(void *user, const char *section, const char *key, const char *value)
{
    conf_ctx *c = user;
    tun_argv *a = c->out;
    if (section[0] && strcmp(section, "server") && strcmp(section, "client"))
        return conf_bad(c, "unknown section [%s]%s (want none, [server] or [client])", section, "");
    if (section[0] && strcmp(section, c->mode)) return 1; /* the other mode's */
    if (!strcmp(key, "config") || !strcmp(key, "help"))
        return conf_bad(c, "%s%s cannot be given in a --config file", key, "");
    if (on_command_line(c, key)) return 1; /* the command line wins */
    char where[600];
    snprintf(where, sizeof where, "--config %s line %d: %s = %s", c->path, c->line, key, value);
    char *opt = malloc(strlen(key) + 3);
    if (opt) sprintf(opt, "--%s", key);
    char *w = own(a, strdup(where));
    if (!own(a, opt) || !w) return conf_bad(c, "%s%s", "out of memory", "");
    if (is_flag(c, key)) {
        int yes = yes_no(value);
        if (yes < 0) return conf_bad(c, "%s wants yes or no, not '%s'", key, value);
        if (yes && push(a, opt, w)) return conf_bad(c, "%s%s", "out of memory", "");
        return 1;
    }
    if (push(a, opt, w) || push(a, own(a, strdup(value)), w))
        return conf_bad(c, "%s%s", "out of memory", "");
    return 1;
}

/* inih reader that counts lines, so errors say where. */
static char *read_line(char *buf, int size, void *stream)
{
    conf_ctx *c = stream;
    char *s = fgets(buf, size, c->f);
    if (s) c->line++;
    return s;
}

static int read_file(conf_ctx *c)
{
    c->f = fopen(c->path, "r");
    if (!c->f) {
        fprintf(stderr, "quack tunnel: cannot read --config %s: %m\n", c->path);
        return 2;
    }
    int rc = ini_parse_stream(read_line, c, on_kv, c);
    fclose(c->f);
    if (rc > 0 && !c->err) {
        c->line = rc;
        conf_bad(c, "%s%s", "want KEY = VALUE, [server] or [client]", "");
    }
    return c->err ? 2 : 0;
}

int tun_config_merge(int argc, char **argv, const char *const *flags, tun_argv *out)
{
    memset(out, 0, sizeof *out);
    int at = 0;
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], "--config")) {
            if (i + 1 >= argc) return fprintf(stderr, "quack tunnel: --config needs a value\n"), 2;
            if (at) return fprintf(stderr, "quack tunnel: give --config once\n"), 2;
            at = i++;
        }
    int rc = 0;
    for (int i = 0; i < argc && i < 2 && !rc; i++) rc = push(out, argv[i], NULL);
    if (at && !rc) {
        conf_ctx c = {.out = out,
                      .path = argv[at + 1],
                      .mode = argv[1],
                      .flags = flags,
                      .argc = argc,
                      .argv = argv};
        if (read_file(&c)) {
            tun_argv_free(out);
            return 2;
        }
    }
    for (int i = 2; i < argc && !rc; i++) {
        if (at && (i == at || i == at + 1)) continue;
        rc = push(out, argv[i], NULL);
    }
    if (rc) {
        fprintf(stderr, "quack tunnel: out of memory\n");
        tun_argv_free(out);
        return 2;
    }
    return 0;
}

void tun_argv_free(tun_argv *a)
{
    for (size_t i = 0; i < a->n_owned; i++) free(a->owned[i]);
    free(a->owned);
    free(a->argv);
    free(a->where);
    memset(a, 0, sizeof *a);
}
