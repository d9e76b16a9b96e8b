/* SPDX-License-Identifier: MIT */
/* Statistics lines the CLI's commands print (cli_stats.c): a connection's
 * counters, an endpoint's admission counters, the workers' totals. */
#ifndef QK_APPS_CLI_STATS_H
#define QK_APPS_CLI_STATS_H

#include <quack/quack.h>
#include <quack/workers.h>
#include <stdio.h>

/** One line of the endpoint's admission and stateless counters. */
void cli_print_endpoint_stats(FILE *f, const qk_endpoint *ep);

/** Print connection statistics. */
void cli_print_conn_stats(FILE *f, const qk_conn_stats *st);

/** Print "preferred address ADDR" on stdout for each preferred address w
 *  bound (RFC 9000 §9.6), and format the listen address into buf ("?" when
 *  it does not fit). */
void cli_workers_addrs(const qk_workers *w, char *buf, size_t cap);

/** --stats after the workers stopped: the endpoint's counters (one worker),
 *  or "worker I " + those per worker and a "workers: N steered_short ..." line. */
void cli_print_workers_stats(FILE *f, qk_workers *w);

#endif
