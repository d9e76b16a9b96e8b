/* SPDX-License-Identifier: MIT */
/* quack — command-line entry point: dispatches to subcommands. */
#include "commands.h"

#include <stdio.h>
#include <string.h>

static const struct qk_cmd commands[] = {
    {"version", qk_cmd_version, "print the version"},
    {"sim", qk_cmd_sim, "run a network simulator scenario (INI file)"},
    {"netem", qk_cmd_netem, "real-time UDP relay applying the link model"},
    {"perf", qk_cmd_perf, "QUIC perf protocol server and client (throughput, latency)"},
    {"tunnel", qk_cmd_tunnel, "carry TCP connections over QUIC (client and server)"},
    {"keygen", qk_cmd_keygen, "make a server key + certificate in a directory, print its pin"},
    {"get", qk_cmd_get, "download https:// URLs over HTTP/3"},
    {"serve", qk_cmd_serve, "serve a directory over HTTP/3"},
    {"media", qk_cmd_media, "audio / LD / HD video flows by urgency, per-flow delays"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: quack COMMAND [OPTIONS]\n\n"
               "quack is a QUIC transport stack; this tool drives it.\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nRun 'quack COMMAND --help' for the options of one command.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "quack: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
