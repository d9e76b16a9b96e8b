/* SPDX-License-Identifier: MIT */
/* `quack sim FILE [--out DIR] [--seed N] [--duration T]`: run a simulator scenario. */
#include "commands.h"

#include <quack/sim.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void sim_usage(FILE *f)
{
    fprintf(f, "usage: quack sim FILE [--out DIR] [--seed N] [--duration TIME] [--quiet]\n\n"
               "Runs the scenario FILE (INI; see docs/sim.md) in virtual time, prints a\n"
               "per-flow and per-link summary and, with --out, writes CSV time series\n"
               "(link_<name>.csv, flow_<name>.csv) to DIR; bench/plot.sh DIR draws them.\n");
}

int qk_cmd_sim(int argc, char **argv)
{
    const char *file = NULL;
    qk_sim_run_opts o = {.progress = stderr};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = i + 1 < argc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            sim_usage(stdout);
            return 0;
        } else if (!strcmp(a, "--out") && more) {
            o.out_dir = argv[++i];
        } else if (!strcmp(a, "--seed") && more) {
            char *end;
            o.seed = strtoull(argv[++i], &end, 0);
            o.has_seed = true;
            if (*end || end == argv[i]) {
                fprintf(stderr, "quack sim: --seed '%s' is not an integer; use e.g. --seed 7\n",
                        argv[i]);
                return 2;
            }
        } else if (!strcmp(a, "--duration") && more) {
            if (qk_sim_parse_time(argv[++i], &o.duration_ns) || !o.duration_ns) {
                fprintf(stderr, "quack sim: --duration '%s' is not a time; use e.g. 5s or 500ms\n",
                        argv[i]);
                return 2;
            }
        } else if (!strcmp(a, "--quiet")) {
            o.progress = NULL;
        } else if (a[0] == '-' || file) {
            fprintf(stderr, "quack sim: unexpected argument '%s'%s\n\n", a,
                    a[0] == '-' && !more ? " (missing value?)" : "");
            sim_usage(stderr);
            return 2;
        } else {
            file = a;
        }
    }
    if (!file) {
        sim_usage(stderr);
        return 2;
    }
    char err[1024];
    qk_sim_scenario *sc = qk_sim_scenario_load(file, &o, err, sizeof err);
    if (!sc) {
        fprintf(stderr, "quack sim: %s\n", err);
        return 1;
    }
    int r = qk_sim_scenario_run(sc, err, sizeof err);
    if (r) {
        fprintf(stderr, "quack sim: %s\n", err);
        qk_sim_scenario_del(sc);
        return 1;
    }
    qk_sim_scenario_print(sc, stdout);
    qk_sim_scenario_del(sc);
    return 0;
}
