/* SPDX-License-Identifier: MIT */
/* `quack tunnel`: TCP over QUIC over UDP, or over yamux over TLS/TCP
 * (include/quack/tunnel.h). */
#include "cli_errors.h"
#include "cli_identity.h"
#include "commands.h"
#include "cli_options.h"
#include "cli_stats.h"
#include "tunnel_app.h"
#include "tunnel_config.h"
#include "tunnel_dns.h"
#include "tunnel_h3.h"

#include <quack/cert.h>
#include <quack/driver.h>
#include <ev.h>
#include <quack/sim.h>
#include <quack/tunnel.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#define TUN_ALPN                        "quack-tunnel" /* the DNS carrier */
#define TUN_INITIAL_STREAM_WINDOW_BYTES (1u << 20)     /* 1.7 BDP of 100 Mbit/s x 50 ms */
#define TUN_INITIAL_CONN_WINDOW_BYTES   (4u << 20)
#define TUN_SEND_LOOKAHEAD_BYTES        (256u << 10) /* written past the peer's credit */

/* Exit codes, one per failure class (listed in --help). */
#define TUN_EXIT_OK     0 /* stopped by SIGINT/SIGTERM */
#define TUN_EXIT_CONN   1 /* the connection failed or was lost (and no redial) */
#define TUN_EXIT_USAGE  2 /* bad options */
#define TUN_EXIT_DENIED 3 /* the server refused our secret */
#define TUN_EXIT_LOCAL  4 /* a local resource: TCP listen, UDP socket, certificate */

/* Client redial backoff: starts here, doubles per failed attempt up to --reconnect-max. */
#define TUN_BACKOFF_MIN_NS (200 * QK_NS_PER_MS)

static void usage_options(FILE *f);
static void usage_more(FILE *f);

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: quack tunnel server --listen UDP_ADDR --to TCP_HOST:PORT [--cert F --key F]\n"
        "                           [options]\n"
        "       quack tunnel client --connect UDP_ADDR (--pin HEX | --insecure)\n"
        "                           --listen TCP_ADDR [options]\n"
        "       add --carrier tcp on both sides where UDP is blocked, --carrier dns\n"
        "       (client: --resolver instead of --connect) where only DNS gets out;\n"
        "       --config FILE reads options from an INI file (below)\n"
        "\n"
        "Carries TCP connections over one QUIC connection: the client accepts TCP\n"
        "connections on --listen and opens one QUIC stream for each; the server\n"
        "connects each stream to --to. Half-close and resets are passed on; a full\n"
        "side holds the other back (QUIC flow control). Over UDP it speaks HTTP/3\n"
        "(ALPN h3): each stream is an HTTP CONNECT request; to anyone without the\n"
        "secret the server is a web server (--masquerade).\n"
        "\n"
        "server:\n"
        "  --listen ADDR:PORT     UDP address to accept QUIC on (port 0 picks one);\n"
        "                         :PORT = every address ([::] and 0.0.0.0)\n"
        "  --to HOST:PORT         TCP address every tunnelled connection goes to\n"
        "  --to socks5            instead, serve SOCKS5 CONNECT (RFC 1928) on each\n"
        "                         flow: the client's --listen is a SOCKS5 proxy;\n"
        "                         refused without --secret-file or --socks-auth-file\n"
        "  --open-proxy           socks5: run without access control anyway\n"
        "  --allow CIDR[:PORTS]   socks5: destinations allowed (repeatable; e.g.\n"
        "                         127.0.0.0/8:8000-8080, [::1]/128). Loopback,\n"
        "                         private, link-local and multicast are denied unless\n"
        "                         allowed; with any --allow, only matches are allowed\n"
        "  --socks-auth-file F    socks5: require RFC 1929 username/password, the\n"
        "                         file's first line USER:PASS\n"
        "  --cert FILE --key FILE certificate (default: the one in --state-dir; its\n"
        "                         pin is printed as \"pin: HEX\")\n"
        "  --state-dir DIR        where the server keeps its key (cert.pem, key.pem;\n"
        "                         made on first start, so the pin survives restarts;\n"
        "                         `quack keygen --out DIR` makes them ahead). Default:\n"
        "                         $XDG_STATE_HOME/quack if set, /var/lib/quack for\n"
        "                         root, else ~/.local/state/quack\n"
        "  --masquerade DIR       udp: what HTTP/3 clients without the secret get: DIR\n"
        "                         served exactly as `quack serve --root DIR` does\n"
        "                         (default: no files, every path 404 Not Found; a\n"
        "                         CONNECT without the secret gets 405, as there)\n"
        "  --masquerade-proxy URL not yet: forwarding strangers to a real site\n" CLI_ADMISSION_HELP
        "client:\n"
        "  --connect ADDR:PORT    the tunnel server (UDP)\n"
        "  --pin HEX              SHA-256 of the server's public key (as printed)\n"
        "  --insecure             do not verify the server at all\n"
        "  --sni NAME             udp: TLS server name and CONNECT authority (default:\n"
        "                         the name in --connect; none for an IP address)\n"
        "  --handshake-timeout T  give up on a connection attempt after T (default 10s)\n"
        "  --listen ADDR:PORT     TCP address to accept connections on (port 0 picks\n"
        "                         one; printed as \"tunnel: listening on ...\");\n"
        "                         :PORT = every address ([::] and 0.0.0.0)\n");
    usage_options(f);
    usage_more(f);
}

/* --help, continued: the options both sides take. */
static void usage_options(FILE *f)
{
    fprintf(f,
            "options:\n"
            "  --carrier udp|tcp|dns  udp: QUIC over UDP (default); tcp: yamux streams over\n"
            "                         TLS 1.3 over TCP (same --cert/--key/--pin scheme; the\n"
            "                         server's --listen and client's --connect are TCP);\n"
            "                         dns: QUIC in DNS queries (options below); several\n"
            "                         at once (udp,tcp,dns or auto): carrier lists below\n"
            "  --fixed-window         tcp: keep yamux windows at 256 KiB (no auto-tuning)\n"
            "  --cc NAME              congestion controller (udp and dns carriers):\n"
            "                         bbr-lt (default) BBRv3 whose loss lowers the rate only\n"
            "                           when the path's signals say congestion (RTT above\n"
            "                           min RTT, ECN CE, loss rising with inflight): fills\n"
            "                           a randomly lossy link, yields at a full buffer\n"
            "                         bbr     BBRv3 as drafted (draft-ietf-ccwg-bbr): a probe\n"
            "                           losing over 2 %% lowers its window: ratchets down\n"
            "                         cubic   RFC 9438; reno RFC 9002's NewReno; dctcp and\n"
            "                           prague: for ECN-marking (L4S) bottlenecks\n"
            "  --bandwidth RATE       bbr-lt/bbr: never pace above RATE (bits/s: 50mbit,\n"
            "                         1gbit, 800k); bbr-lt starts there, without a search,\n"
            "                         and still slows down on loss it reads as congestion.\n"
            "                         Each end bounds what it sends: give it to both ends\n"
            "  --keep-alive TIME      PING after TIME without traffic (client default 10s,\n"
            "                         server default off; 0 = off), below --idle-timeout\n"
            "  --idle-timeout TIME    close after TIME without traffic (default 30s)\n"
            "  --max-flows N          concurrent TCP connections (default %u)\n"
            "  --qlog DIR             write a qlog per connection into DIR\n"
            "  --keylog FILE          udp, dns: append the TLS secrets (NSS key log format)\n"
            "                         to FILE, for Wireshark/tshark to decrypt a capture\n"
            "  --no-gso               udp: one datagram per send (a capture shows each\n"
            "                         packet, not a GSO batch)\n"
            "  --stats                one \"stats:\" line per second (flows, bytes, UDP\n"
            "                         datagrams), and connection statistics at the end\n"
            "  --log FILE             append log lines to FILE instead of stderr; SIGHUP\n"
            "                         reopens it (after logrotate moved it)\n"
            "  --quiet                no progress lines, no per-flow log lines\n"
            "  --reconnect-max TIME   client: redial when the connection fails (the first\n"
            "                         one too) or dies, backoff from 200ms doubling up to\n"
            "                         TIME, with jitter; at once when the server closed\n"
            "                         it (default 10s; 0 = exit 1). A server key that does\n"
            "                         not match --pin (exit 1) or access denied (exit 3)\n"
            "                         ends the client\n"
            "  --hold TIME            client: while redialling, new TCP connections wait\n"
            "                         TIME in the listen backlog, then are refused with a\n"
            "                         log line (default 10s)\n"
            "  --session-buffer SIZE  bytes per flow kept until the far end has written\n"
            "                         them to its TCP socket, to resend after a reconnect\n"
            "                         (default 4M; K, M, G suffixes); full = that flow's\n"
            "                         TCP socket is not read (backpressure). udp: also\n"
            "                         the flow's QUIC send buffer: raise it where one\n"
            "                         flow must fill a long, fat or lossy path\n"
            "  --session-cap SIZE     those buffers for all flows of one client (default\n"
            "                         64M; flows grow theirs to 3/4 of it, the rest is\n"
            "                         for new flows); a new flow that does not fit is\n"
            "                         refused\n"
            "  --session-linger TIME  server: keep a client's flows this long after its\n"
            "                         connection died, for it to resume them (default\n"
            "                         5min); client: give up resuming after TIME. Flows\n"
            "                         of a session the server no longer knows are reset\n"
            "  --session-max N        server: keep at most N detached sessions (clients\n"
            "                         whose connection died) for a resume (default\n"
            "                         1024); one more detaches: the oldest is forgotten\n"
            "                         at once, its flows reset, with a log line\n"
            "  --udp-listen ADDR:PORT client: also carry UDP received here, in QUIC\n"
            "                         DATAGRAM frames (RFC 9221), one session per source\n"
            "  --udp-to HOST:PORT     server: where UDP sessions go (one socket each)\n"
            "  --udp-idle TIME        forget a UDP session idle this long (default 60s)\n"
            "  --udp-urgency N        DATAGRAM urgency 0 (first) .. 7 (default 3)\n",
            QK_TUNNEL_DEFAULT_MAX_FLOWS);
}

/* --help, continued: access control, config files, signals, exit status, DNS. */
static void usage_more(FILE *f)
{
    fputs("  --secret-file FILE     access control (both sides, every carrier): the\n"
          "                         client proves it knows FILE's bytes (HMAC-SHA256\n"
          "                         over this connection's TLS exporter, not\n"
          "                         replayable). udp: in a proxy-authorization header\n"
          "                         of every CONNECT; without it the server answers as\n"
          "                         the --masquerade site. tcp, dns: before any flow;\n"
          "                         the server closes other connections with \"access\n"
          "                         denied: ...\"\n"
          "  --config FILE          options from an INI file: the long options' names\n"
          "                         without dashes as keys, at the top or in a [server]\n"
          "                         or [client] section (the other mode's is skipped);\n"
          "                         flags take yes/no; repeat a key to repeat it. An\n"
          "                         option on the command line replaces the file's\n"
          "                         (all of a repeated one), e.g.:\n"
          "                           connect = tunnel.example.org:4433\n"
          "                           pin = 4f1c...e2\n"
          "                           listen = 127.0.0.1:1080\n"
          "                           secret-file = /etc/quack/tunnel.secret\n"
          "Signals: SIGTERM/SIGINT stop; the server first closes every connection with\n"
          "the reason \"server shutting down\" (QUIC CONNECTION_CLOSE; tcp: yamux GoAway\n"
          "and TLS close_notify), and clients redial at once. SIGHUP reopens --log.\n"
          "Exit status: 0 after SIGINT/SIGTERM; 1 the connection failed or was lost\n"
          "(client: with --reconnect-max 0, or the server's key does not match --pin);\n"
          "2 bad options; 3 access denied by the server (wrong or missing secret);\n"
          "4 a local resource failed (TCP listen, UDP socket, certificate, state\n"
          "directory).\n",
          f);
    tun_dns_usage(f);
    tun_auto_usage(f);
    tun_hop_usage(f);
}

/* A usage error: "quack tunnel: ..." and the --help hint; exit status 2. */
#define bad(...) cli_usage_error("tunnel", __VA_ARGS__)

static int parse_time_opt(const char *name, const char *v, qk_time *out)
{
    if (!strcmp(v, "0")) {
        *out = 0;
        return 0;
    }
    if (qk_sim_parse_time(v, out) || !*out)
        return bad("%s wants a time such as 10s or 500ms, not '%s'", name, v);
    return 0;
}

/* The one place carriers are named. */
static int parse_carrier(tun_opts *o, const char *v)
{
    static const char *const names[] = {"udp", "tcp", "dns"};
    if (tun_auto_parse(&o->cars, v, names, sizeof names / sizeof names[0]))
        return bad("--carrier wants udp, tcp, dns, auto or a list such as udp,tcp, not '%s'", v);
    o->carrier = (tun_carrier)o->cars.order[0];
    if (o->cars.n > 1 && o->carrier != TUN_CARRIER_UDP)
        return bad("--carrier %s: a list starts with udp (the best carrier first)", v);
    return 0;
}

/* A --listen address: ADDR:PORT, or :PORT for every address: [::] (the
 * sockets clear IPV6_V6ONLY, so IPv4 too) where the host has IPv6, else
 * 0.0.0.0. Returns 0 or a usage error's exit status. */
static int parse_listen(const char *v, qk_addr *out)
{
    if (v[0] != ':') return cli_parse_addr("tunnel", "--listen", v, out);
    char buf[64];
    int fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd >= 0) close(fd);
    snprintf(buf, sizeof buf, "%s%s", fd >= 0 ? "[::]" : "0.0.0.0", v);
    if (strlen(v) > 6 || qk_addr_parse(buf, out))
        return bad("--listen %s: want :PORT (0..65535), ADDR:PORT or [V6]:PORT", v);
    return 0;
}

/* --socks-auth-file: "USER:PASS" on the first line (RFC 1929: 1..255 bytes each). */
static int read_auth_file(tun_opts *o, const char *path)
{
    FILE *f = fopen(path, "r");
    char line[600];
    if (!f) return bad("cannot read --socks-auth-file %s: %m", path);
    bool got = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    line[got ? strcspn(line, "\r\n") : 0] = 0;
    char *colon = strchr(line, ':');
    if (!colon || colon == line || !colon[1] || strlen(line) - 1 > 2 * 255 ||
        (size_t)(colon - line) > 255 || strlen(colon + 1) > 255)
        return bad("--socks-auth-file %s: want one line USER:PASS (1..255 bytes each)", path);
    *colon = 0;
    snprintf(o->socks_user, sizeof o->socks_user, "%s", line);
    snprintf(o->socks_pass, sizeof o->socks_pass, "%s", colon + 1);
    return 0;
}

/* --secret-file: its bytes (a trailing newline dropped), 16..1024 bytes. */
static int read_secret_file(tun_opts *o, const char *path)
{
    int r = cli_read_secret(path, o->secret, sizeof o->secret, &o->secret_len);
    if (r == QK_ERR_IO) return bad("cannot read --secret-file %s: %m", path);
    if (r)
        return bad("--secret-file %s: want 16 to 1024 bytes (e.g. head -c 32 /dev/urandom | "
                   "base64), not %zu%s",
                   path, o->secret_len, o->secret_len == sizeof o->secret ? " or more" : "");
    return 0;
}

/* --session-buffer, --session-cap, --session-max, --session-linger: 0, or bad()'s exit status. */
static int parse_session_opt(tun_opts *o, const char *a, const char *v)
{
    if (!strcmp(a, "--session-buffer") || !strcmp(a, "--session-cap")) {
        uint64_t n;
        if (cli_parse_size(v, &n) || n < (64u << 10) || n > (1ull << 40))
            return bad("%s wants a size from 64K to 1T such as 4M, not '%s'", a, v);
        *(!strcmp(a, "--session-cap") ? &o->session_buffer_bytes : &o->flow_buffer_bytes) = n;
        return 0;
    }
    if (!strcmp(a, "--session-max") && o->server) {
        char *end;
        unsigned long long n = strtoull(v, &end, 10);
        if (*end || !*v || n < 1 || n > 1000000)
            return bad("--session-max wants a count from 1 to 1000000 such as 1024, not '%s'", v);
        o->session_max = (size_t)n;
        return 0;
    }
    if (!strcmp(a, "--session-linger")) {
        if (parse_time_opt(a, v, &o->session_linger_ns) || !o->session_linger_ns)
            return bad("%s", "--session-linger wants a time above 0, such as 5min or 30s");
        return 0;
    }
    return bad("unknown option '%s' for tunnel %s", a, o->server ? "server" : "client");
}

/* --dns-listen (server), --probe-interval (client): carrier lists. 0, or bad()'s status. */
static int parse_auto_opt(tun_opts *o, const char *a, const char *v)
{
    if (!strcmp(a, "--dns-listen") && o->server) {
        o->dns_listen_str = v;
        if (qk_addr_parse(v, &o->dns_listen))
            return bad("--dns-listen wants ADDR:PORT or [V6]:PORT, not '%s'", v);
        return 0;
    }
    if (!strcmp(a, "--probe-interval") && !o->server) {
        if (parse_time_opt(a, v, &o->cars.probe_ns) || !o->cars.probe_ns)
            return bad("%s", "--probe-interval wants a time above 0, such as 5s");
        return 0;
    }
    return bad("unknown option '%s' for tunnel %s", a, o->server ? "server" : "client");
}

/* The HTTP/3 carrier's options (docs/tunnel.md "Wire format: HTTP/3"). */
static int parse_h3_opt(tun_opts *o, const char *a, const char *v)
{
    if (!strcmp(a, "--keylog")) {
        o->keylog = v;
    } else if (!strcmp(a, "--sni") && !o->server) {
        if (!*v || strlen(v) >= sizeof o->sni_buf || strchr(v, ':'))
            return bad("--sni wants a host name (no port), not '%s'", v);
        o->sni = v;
    } else if (!strcmp(a, "--masquerade") && o->server) {
        o->masquerade = v;
    } else if (!strcmp(a, "--masquerade-proxy") && o->server) {
        return bad("--masquerade-proxy %s: not implemented yet; serve a directory with "
                   "--masquerade DIR",
                   v);
    } else {
        return bad("unknown option '%s' for tunnel %s", a, o->server ? "server" : "client");
    }
    return 0;
}

/* --udp-listen (client), --udp-to (server), --udp-idle, --udp-urgency: 0, or
 * bad()'s exit status. */
static int parse_udp_opt(tun_opts *o, const char *a, const char *v)
{
    if (!strcmp(a, "--udp-idle")) {
        if (parse_time_opt(a, v, &o->udp_idle_ns) || !o->udp_idle_ns)
            return bad("%s", "--udp-idle wants a time above 0");
    } else if (!strcmp(a, "--udp-urgency")) {
        if (strlen(v) != 1 || v[0] < '0' || v[0] > '7')
            return bad("--udp-urgency wants 0..7, not '%s'", v);
        o->udp_urgency = (unsigned)(v[0] - '0');
    } else {
        o->udp_fwd_str = v;
        if (qk_addr_parse(v, &o->udp_fwd))
            return bad("%s wants HOST:PORT or [V6]:PORT, not '%s'", a, v);
    }
    return 0;
}

/* One option with a value: 0, or bad()'s exit status. */
static int parse_value(tun_opts *o, const char *a, const char *v)
{
    if (!strcmp(a, "--listen")) {
        if (o->server)
            o->udp_str = v;
        else
            o->tcp_str = v;
    } else if (!strcmp(a, "--to") && o->server) {
        o->tcp_str = v;
    } else if (!strcmp(a, "--connect") && !o->server) {
        o->udp_str = v;
    } else if (!strcmp(a, "--allow") && o->server) {
        if (o->n_allow == TUN_MAX_ALLOW) return bad("at most %d --allow rules", TUN_MAX_ALLOW);
        if (qk_tunnel_allow_parse(v, &o->allow[o->n_allow++]))
            return bad("--allow wants CIDR[:PORT[-PORT]], not '%s'", v);
    } else if (!strcmp(a, "--socks-auth-file") && o->server) {
        if (read_auth_file(o, v)) return 2;
    } else if ((!strcmp(a, "--udp-listen") && !o->server) ||
               (!strcmp(a, "--udp-to") && o->server) || !strcmp(a, "--udp-idle") ||
               !strcmp(a, "--udp-urgency")) {
        return parse_udp_opt(o, a, v);
    } else if (!strcmp(a, "--secret-file")) {
        if (read_secret_file(o, v)) return 2;
    } else if (!strcmp(a, "--cert") && o->server) {
        o->cert_file = v;
    } else if (!strcmp(a, "--key") && o->server) {
        o->key_file = v;
    } else if (!strcmp(a, "--state-dir") && o->server) {
        o->state_dir = v;
    } else if (!strcmp(a, "--pin") && !o->server) {
        o->pin = v;
    } else if (!strcmp(a, "--sni") || !strncmp(a, "--masquerade", 12) || !strcmp(a, "--keylog")) {
        return parse_h3_opt(o, a, v);
    } else if (!strcmp(a, "--carrier")) {
        if (parse_carrier(o, v)) return 2;
        o->dns.on = o->carrier == TUN_CARRIER_DNS;
    } else if (!strcmp(a, "--hop-interval")) {
        return tun_hop_parse_interval(&o->hop, v);
    } else if (!strcmp(a, "--dns-listen") || !strcmp(a, "--probe-interval")) {
        return parse_auto_opt(o, a, v);
    } else if (!strcmp(a, "--log")) {
        o->log_file = v;
    } else if (!strcmp(a, "--qlog")) {
        o->qlog_dir = v;
    } else if (!strcmp(a, "--cc")) {
        if (cli_parse_cc(v, &o->cc))
            return bad("--cc wants one of %s, not '%s'", qk_cc_kind_names(), v);
        o->cc_set = true;
    } else if (!strcmp(a, "--bandwidth")) {
        if (qk_sim_parse_rate(v, &o->bandwidth_bps) || o->bandwidth_bps < 100000)
            return bad("--bandwidth wants a rate of at least 100kbit with its unit, like 50mbit "
                       "or 1gbit (bits per second), not '%s'",
                       v);
    } else if (!strcmp(a, "--keep-alive")) {
        if (parse_time_opt(a, v, &o->keep_alive_ns)) return 2;
    } else if (!strcmp(a, "--reconnect-max") && !o->server) {
        if (parse_time_opt(a, v, &o->reconnect_max_ns)) return 2;
    } else if (!strcmp(a, "--hold") && !o->server) {
        if (parse_time_opt(a, v, &o->hold_ns) || !o->hold_ns)
            return bad("%s", "--hold wants a time above 0");
    } else if (!strcmp(a, "--idle-timeout")) {
        if (parse_time_opt(a, v, &o->idle_timeout_ns)) return 2;
    } else if (!strncmp(a, "--session-", 10)) {
        return parse_session_opt(o, a, v);
    } else if (!strcmp(a, "--max-flows")) {
        char *end;
        unsigned long long n = strtoull(v, &end, 10);
        if (*end || !n || n > 100000) return bad("--max-flows wants 1..100000, not '%s'", v);
        o->max_flows = n;
    } else {
        return bad("unknown option '%s' for tunnel %s", a, o->server ? "server" : "client");
    }
    return 0;
}

/* Client: the TLS server name (--sni, else the host in --connect when it is
 * a name: RFC 6066 §3 allows no address literal) and the :authority of the
 * CONNECTs (that name, or the address, with the port). */
static void tun_name_server(tun_opts *o)
{
    const char *c = o->udp_str, *colon = strrchr(c, ':');
    size_t hl = colon ? (size_t)(colon - c) : strlen(c);
    unsigned char ip[16];
    if (!o->sni && c[0] != '[' && hl && hl < sizeof o->sni_buf) {
        memcpy(o->sni_buf, c, hl);
        o->sni_buf[hl] = 0;
        if (inet_pton(AF_INET, o->sni_buf, ip) != 1) o->sni = o->sni_buf;
    }
    if (o->sni)
        snprintf(o->authority, sizeof o->authority, "%s:%u", o->sni, qk_addr_port(&o->udp));
    else
        snprintf(o->authority, sizeof o->authority, "%s", c);
}

/* The options together. Returns 0 or bad()'s exit status. */
static int check_opts(tun_opts *o)
{
    if (o->cars.is_auto && o->dns.domain) tun_auto_add(&o->cars, TUN_CARRIER_DNS);
    bool dns_listed = o->cars.n > 1 && tun_auto_has(&o->cars, TUN_CARRIER_DNS);
    o->dns.on = o->dns.on || dns_listed; /* checked as for --carrier dns */
    int drc = tun_dns_check(&o->dns, o->server);
    o->dns.on = o->carrier == TUN_CARRIER_DNS; /* the primary carrier's profile */
    if (drc) return 2;
    if (dns_listed && o->server && !o->dns_listen_str)
        return bad("%s", "dns in a carrier list needs --dns-listen ADDR:PORT (the name server's "
                         "UDP port; --listen is QUIC's)");
    if (o->dns_listen_str && !dns_listed)
        return bad("%s", "--dns-listen goes with a carrier list that has dns (--carrier auto)");
    if (o->dns.on && !o->server) { /* the pool sockets take the first resolver's family */
        if (o->udp_str) return bad("%s", "--connect does not go with --carrier dns (--resolver)");
        o->udp_str = o->dns.resolver_str[0];
    }
    if (!o->udp_str) return bad("%s", o->server ? "--listen is required" : "--connect is required");
    if (!o->tcp_str) return bad("%s", o->server ? "--to is required" : "--listen is required");
    if (!o->server && !o->pin == !o->insecure)
        return bad("%s", "the client needs exactly one of --pin HEX and --insecure");
    if (o->server && !o->cert_file != !o->key_file)
        return bad("%s", "--cert and --key go together");
    if (o->keep_alive_ns && o->idle_timeout_ns && o->keep_alive_ns >= o->idle_timeout_ns)
        return bad("%s", "--keep-alive must be shorter than --idle-timeout");
    char first[300]; /* a port range (tunnel_hop.c): its first port */
    const char *ua = o->udp_str;
    int arc =
        tun_hop_take_range(&o->hop, o->server ? "--listen" : "--connect", ua, first, sizeof first);
    if (arc == 2) return arc;
    if (arc == 1) ua = first;
    arc =
        o->server ? parse_listen(ua, &o->udp) : cli_parse_addr("tunnel", "--connect", ua, &o->udp);
    if (arc) return arc;
    if (tun_hop_check(&o->hop, o->server, o->carrier == TUN_CARRIER_UDP && o->cars.n == 1, &o->udp))
        return 2;
    if (!o->server) tun_name_server(o);
    o->socks5 = o->server && !strcmp(o->tcp_str, "socks5");
    if (o->udp_fwd_str && o->carrier == TUN_CARRIER_TCP)
        return bad("%s", "UDP forwarding needs QUIC DATAGRAM frames: not with --carrier tcp");
    if ((o->n_allow || o->socks_user[0] || o->open_proxy) && !o->socks5)
        return bad("%s", "--allow, --socks-auth-file and --open-proxy go with --to socks5");
    if (o->socks5 && !o->secret_len && !o->socks_user[0] && !o->open_proxy)
        return bad("%s", "--to socks5 without access control is an open proxy: anyone who "
                         "reaches --listen may use it. Give --secret-file FILE (both sides) or "
                         "--socks-auth-file FILE, or --open-proxy if that is what you want");
    if (!o->server && (arc = parse_listen(o->tcp_str, &o->tcp))) return arc;
    if (o->server && !o->socks5 && qk_addr_parse(o->tcp_str, &o->tcp))
        return bad("cannot parse address '%s' (want HOST:PORT or [V6]:PORT)", o->tcp_str);
    /* Tunnels live on lossy paths (Wi-Fi, cellular, long hauls) where CUBIC
     * and the drafted BBR read random loss as congestion: bbr-lt by default
     * on every carrier that runs QUIC (docs/cc.md "Loss that is not
     * congestion", bench/cc.sh part 7). */
    if (!o->cc_set) o->cc = QK_CONFIG_CC_BBR_LT;
    if (o->cars.n > 1 && !o->server && !o->admission.timeout_set) { /* then the next carrier */
        o->admission.handshake_timeout_ns = TUN_AUTO_HANDSHAKE_NS;
        o->admission.timeout_set = true;
    }
    if (!o->cars.probe_ns) o->cars.probe_ns = TUN_AUTO_PROBE_NS;
    if (o->bandwidth_bps && o->cc != QK_CONFIG_CC_BBR_LT && o->cc != QK_CONFIG_CC_BBR)
        return bad("--bandwidth bounds a rate-paced controller: use it with --cc bbr-lt (the "
                   "default) or bbr, not %s",
                   qk_cc_kind_name(o->cc));
    if (o->bandwidth_bps && o->carrier == TUN_CARRIER_TCP)
        return bad("%s", "--bandwidth needs a QUIC carrier (udp or dns): with --carrier tcp the "
                         "kernel's TCP paces");
    return 0;
}

/* The options without a value (tunnel_config.c reads yes/no for them). */
static const char *const tun_flag_names[] = {"insecure",   "quiet",  "stats", "fixed-window",
                                             "open-proxy", "no-gso", NULL};

static bool *flag_ptr(tun_opts *o, const char *a)
{
    bool *const at[] = {&o->insecure,     &o->quiet,      &o->stats,
                        &o->fixed_window, &o->open_proxy, &o->no_gso};
    for (size_t k = 0; tun_flag_names[k]; k++)
        if (a[0] == '-' && a[1] == '-' && !strcmp(a + 2, tun_flag_names[k])) return at[k];
    return NULL;
}

/* The option at argv[*i] (and its value: *i moves past it). Returns 0, or
 * the exit status of a usage error (printed). */
static int parse_one(tun_opts *o, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    bool *flag = flag_ptr(o, a);
    if (flag) {
        *flag = true;
        return 0;
    }
    int hto = o->server ? 0 : cli_parse_handshake_timeout("tunnel", argc, argv, i, &o->admission);
    if (hto) return hto == 1 ? 0 : hto;
    if (o->server) { /* RFC 9000 §8.1.2: admission control */
        int adm = cli_parse_admission(&o->admission, argc, argv, i, "quack tunnel server");
        if (adm) return adm < 0 ? 2 : 0;
    }
    if (*i + 1 >= argc) return bad("%s needs a value", a);
    const char *v = argv[++*i];
    int drc = tun_dns_parse_opt(&o->dns, a, v);
    if (drc != 1) return drc;
    return parse_value(o, a, v);
}

/* argv: "tunnel", the mode, options; where[i] (may be NULL) says which
 * --config line argument i came from. Returns 0, -1 after --help, or a usage
 * error's exit status. */
static int parse(tun_opts *o, int argc, char **argv, const char *const *where)
{
    if (argc < 2) return bad("server or client?");
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(stdout);
        return -1;
    }
    if (strcmp(argv[1], "server") && strcmp(argv[1], "client"))
        return bad("unknown mode '%s' (want server or client)", argv[1]);
    o->server = !strcmp(argv[1], "server");
    o->cc = QK_CONFIG_CC_CUBIC;
    o->keep_alive_ns = o->server ? 0 : 10 * QK_NS_PER_S;
    o->idle_timeout_ns = 30 * QK_NS_PER_S;
    o->reconnect_max_ns = 10 * QK_NS_PER_S;
    o->hold_ns = 10 * QK_NS_PER_S;
    o->udp_urgency = 3;
    tun_dns_opts_init(&o->dns);
    o->cars.n = 1; /* udp */
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return -1;
        }
        int at = i, rc = parse_one(o, argc, argv, &i);
        if (rc) {
            if (where && where[at]) fprintf(stderr, "quack tunnel: (from %s)\n", where[at]);
            return rc;
        }
    }
    return check_opts(o);
}

static void tun_log(void *ctx, const char *line)
{
    tun *s = ctx;
    fprintf(stderr, "%s: %s\n", s->who, line);
    fflush(stderr);
}

static void do_kick(void *ctx)
{
    tun *s = ctx;
    if (s->tcp) qk_tunnel_tcp_kick(s->tcp);
    if (s->loop) qk_io_loop_kick(s->loop); /* all of them with a carrier list */
    if (s->dns_loop) qk_io_loop_kick(s->dns_loop);
}

static void on_exit_timer(struct ev_loop *ev, ev_timer *w, int revents)
{
    (void)ev;
    (void)revents;
    tun *s = w->data;
    if (s->loop)
        qk_io_loop_break(s->loop);
    else
        ev_break(s->evl, EVBREAK_ALL);
}

/* Server: connection c is up (add) or closed (remove): the ones stop() closes. */
static void track_conn(tun *s, qk_conn *c, bool up)
{
    if (!up) {
        for (size_t i = 0; i < s->n_conns; i++)
            if (s->conns[i] == c) {
                s->conns[i] = s->conns[--s->n_conns];
                return;
            }
        return;
    }
    if (s->n_conns == s->cap_conns) {
        size_t cap = s->cap_conns ? 2 * s->cap_conns : 16;
        qk_conn **a = realloc(s->conns, cap * sizeof *a);
        if (!a) return; /* not told on stop: it ends by its idle timeout */
        s->conns = a;
        s->cap_conns = cap;
    }
    s->conns[s->n_conns++] = c;
}

/* End: abort the flows (their streams are reset), close the connections
 * (the client's, or every one the server has, with a reason), and stop the
 * loop right after the CONNECTION_CLOSEs went out. */
static void stop(tun *s)
{
    if (s->stopping) return;
    s->stopping = true;
    ev_timer_stop(s->evl, &s->redial);
    for (size_t i = 0; s->o->stats && i <= s->n_conns; i++) { /* the client's, each server's */
        qk_conn *c = i < s->n_conns ? s->conns[i] : s->conn;
        if (!c) continue;
        qk_conn_stats st;
        qk_conn_stats_get(c, &st);
        cli_print_conn_stats(stderr, &st);
    }
    if (s->o->stats && s->dns) tun_dns_print_stats(s->dns, stderr);
    if (s->o->stats && s->dns2) tun_dns_print_stats(s->dns2, stderr);
    qk_tunnel_tcp_set_tunnel(s->tcp, NULL);
    qk_tunnel_del(s->t); /* flows aborted: their streams reset */
    s->t = NULL;
    if (s->conn) qk_conn_close(s->conn, 0, "tunnel client stopped");
    if (s->probe) qk_conn_close(s->probe, 0, "tunnel client stopped");
    ev_timer_stop(s->evl, &s->probe_w);
    for (size_t i = 0; i < s->n_conns; i++) /* RFC 9000 §10.2: immediate close, a reason */
        qk_conn_close(s->conns[i], 0, s->stop_reason ? s->stop_reason : "server stopped");
    if (s->loop) qk_io_loop_kick(s->loop);
    if (s->dns_loop) qk_io_loop_kick(s->dns_loop);
    qk_tunnel_tcp_go_away(s->tcp); /* yamux: GoAway(normal), TLS close_notify */
    ev_timer_init(&s->exit_timer, on_exit_timer, 0.05, 0.0);
    s->exit_timer.data = s;
    ev_timer_start(s->evl, &s->exit_timer);
}

static void on_signal(struct ev_loop *ev, ev_signal *w, int revents)
{
    (void)ev;
    (void)revents;
    tun *s = w->data;
    s->stop_reason =
        w->signum == SIGTERM ? "server shutting down (SIGTERM)" : "server shutting down (SIGINT)";
    stop(s);
}

/* The client's TCP listener is up (rc 0) on top of a carrier session: say
 * where, or give up. */
static void listening(tun *s, int rc, const char *carrier)
{
    if (rc) {
        fprintf(stderr, "%s: cannot listen on %s: %m\n", s->who, s->o->tcp_str);
        s->exit_code = TUN_EXIT_LOCAL;
        stop(s);
        return;
    }
    qk_addr la;
    char buf[QK_ADDR_STRLEN];
    qk_tunnel_listen_addr(s->t, &la);
    if (qk_addr_format(&la, buf, sizeof buf) < 0) snprintf(buf, sizeof buf, "?");
    printf("tunnel: listening on %s (TCP) -> %s (%s)\n", buf, s->o->udp_str, carrier);
    fflush(stdout);
}

/* Client: session sess is up (and authenticated): open or resume the listener. */
static void session_ready(tun *s, const qk_tunnel_carrier *car, void *sess)
{
    s->backoff_ns = TUN_BACKOFF_MIN_NS;
    if (car == &qk_tunnel_carrier_quic) qk_tunnel_udp_set_conn(s->udp, sess);
    if (car == &tun_h3_carrier) qk_tunnel_udp_set_conn(s->udp, tun_h3_conn(sess));
    tun_auto_up(s);
    if (!s->listening) {
        s->listening = true;
        s->attempts = 0;
        listening(s, qk_tunnel_listen_on(s->t, &s->o->tcp, car, sess),
                  tun_carriers[tun_auto_current(&s->cars)].listen_label);
        return;
    }
    fprintf(stderr, "%s: reconnected to %s after %u attempt(s)\n", s->who, s->o->udp_str,
            s->attempts);
    s->attempts = 0;
    qk_tunnel_set_session(s->t, car, sess);
}

/* Client: the server's answer to our authentication stream. */
static void on_auth(void *ctx, void *sess, bool ok)
{
    tun *s = ctx;
    if (sess != s->sess || s->stopping) return;
    if (ok) {
        session_ready(s, s->sess_car, sess);
        return;
    }
    fprintf(stderr,
            "%s: access denied: the server refused the authentication stream (does it "
            "have --secret-file?)\n",
            s->who);
    s->exit_code = TUN_EXIT_DENIED;
    stop(s);
}

/* Client: the server answered a CONNECT with an error status: the web
 * server every stranger sees, so our proof was wrong or missing. */
static void on_h3_refused(void *ctx, tun_h3 *w, unsigned status)
{
    tun *s = ctx;
    (void)w;
    if (s->stopping || s->exit_code == TUN_EXIT_DENIED) return;
    fprintf(stderr,
            "%s: access denied: wrong secret or none (the server answered %u to the tunnel's "
            "CONNECT, as to a stranger; give both sides the same --secret-file)\n",
            s->who, status);
    s->exit_code = TUN_EXIT_DENIED; /* tun_app stops once the tunnel call returned */
}

static bool tun_h3_of_known(qk_conn *c)
{
    const char *alpn = qk_conn_alpn(c);
    return alpn && !strcmp(alpn, QK_H3_ALPN);
}

/* The HTTP/3 layer of connection c (ALPN h3; made at its first event), or
 * NULL for a connection of the DNS carrier (ALPN quack-tunnel). */
static tun_h3 *tun_h3_of(tun *s, qk_conn *c)
{
    if (!c || !tun_h3_of_known(c)) return NULL;
    tun_h3 *w = qk_conn_user(c);
    if (w) return w;
    tun_h3_config hc = {.server = s->o->server,
                        .authority = s->o->authority,
                        .secret = s->o->secret_len ? s->o->secret : NULL,
                        .secret_len = s->o->secret_len,
                        .site = s->site,
                        .refused = on_h3_refused,
                        .ctx = s};
    w = tun_h3_new(c, &hc);
    qk_conn_set_user(c, w);
    return w;
}

/* After the loop: the HTTP/3 layers of connections that had no CLOSED event
 * (the server's still open at stop, the client's). */
static void tun_h3_release(tun *s)
{
    for (size_t i = 0; i <= s->n_conns + 2; i++) {
        qk_conn *c = i < s->n_conns        ? s->conns[i]
                     : i == s->n_conns     ? s->conn
                     : i == s->n_conns + 1 ? s->left
                                           : s->probe;
        tun_h3 *w = c && tun_h3_of_known(c) ? qk_conn_user(c) : NULL;
        if (!w) continue;
        qk_conn_set_user(c, NULL);
        tun_h3_del(w);
    }
}

/* Client: a carrier session came up: prove the secret first, if any (over
 * HTTP/3 every CONNECT carries the proof). */
static void tun_session_up(tun *s, const qk_tunnel_carrier *car, void *sess)
{
    tun_h3 *w = car == &qk_tunnel_carrier_quic ? tun_h3_of(s, sess) : NULL;
    if (w) {
        car = &tun_h3_carrier;
        sess = w;
    }
    s->sess = sess;
    s->sess_car = car;
    if (!s->o->secret_len || w) {
        session_ready(s, car, sess);
        return;
    }
    int rc = qk_tunnel_auth(s->t, car, sess);
    if (rc) {
        fprintf(stderr, "%s: cannot authenticate (error %d)\n", s->who, rc);
        s->exit_code = TUN_EXIT_CONN;
        stop(s);
    }
}

static void on_connected(tun *s, qk_conn *c)
{
    if (s->o->server && s->stopping) /* came in while stopping: told at once */
        qk_conn_close(c, 0, s->stop_reason ? s->stop_reason : "server stopped");
    else if (s->o->server)
        track_conn(s, c, true);
    else if (c == s->conn)
        tun_session_up(s, &qk_tunnel_carrier_quic, c);
}

static void schedule_redial(tun *s, bool at_once);

/* Client: dial the server (again). Returns 0 or qk_connect's error. */
static int tun_dial(tun *s)
{
    qk_addr none;
    memset(&none, 0, sizeof none);
    qk_addr peer = s->o->udp;
    if (s->dns) tun_dns_server_addr(&peer);
    int rc = qk_connect(s->ep, &none, &peer, s->o->sni, qk_io_now(), &s->conn);
    if (rc) fprintf(stderr, "%s: cannot start the connection (error %d)\n", s->who, rc);
    return rc;
}

static void on_redial(struct ev_loop *ev, ev_timer *w, int revents)
{
    (void)ev;
    (void)revents;
    tun *s = w->data;
    if (s->stopping || s->conn) return;
    s->attempts++;
    if (s->cars.n > 1) { /* a carrier list: from its best carrier again */
        s->cars.cur = 0;
        if (tun_auto_dial(s) && !tun_auto_next(s, "cannot start")) schedule_redial(s, false);
        return;
    }
    if (s->tcp) { /* yamux: the session arrives by tcp_on_session */
        if (qk_tunnel_tcp_redial(s->tcp)) schedule_redial(s, false);
        return;
    }
    if (tun_dial(s)) {
        schedule_redial(s, false);
        return;
    }
    qk_io_loop_kick(s->loop);
}

/* Capped exponential backoff with jitter: wait a uniform 50..100 % of the
 * current step, then double the step up to --reconnect-max. at_once (the
 * server closed the connection: it stops or restarts): now, and the backoff
 * starts over. */
static void schedule_redial(tun *s, bool at_once)
{
    uint32_t r;
    cli_rng(NULL, (uint8_t *)&r, sizeof r);
    if (at_once) s->backoff_ns = TUN_BACKOFF_MIN_NS;
    qk_time step = s->backoff_ns ? s->backoff_ns : TUN_BACKOFF_MIN_NS;
    qk_time wait_ns = step / 2 + (qk_time)((double)(step / 2) * ((double)r / 4294967296.0));
    if (at_once) wait_ns = 0;
    s->backoff_ns = step * 2 > s->o->reconnect_max_ns ? s->o->reconnect_max_ns : step * 2;
    char when[48];
    snprintf(when, sizeof when, at_once ? "at once" : "in %.0f ms", (double)wait_ns / 1e6);
    fprintf(stderr, "%s: %s; redialling %s %s (attempt %u)\n", s->who,
            at_once         ? "the server closed the connection"
            : !s->listening ? "no connection to the server yet"
                            : "connection lost",
            s->o->udp_str, when, s->attempts + 1);
    ev_timer_init(&s->redial, on_redial, (double)wait_ns / 1e9, 0.0);
    s->redial.data = s;
    ev_timer_start(s->evl, &s->redial);
}

/* How a client's connection ended, for conn_lost. */
typedef enum tun_lost {
    TUN_LOST_RETRY,   /* failed, timed out, broke: redial with backoff */
    TUN_LOST_AT_ONCE, /* the server closed it (stopping, restarting): redial now */
    TUN_LOST_DENIED,  /* access denied: exit 3 */
    TUN_LOST_FATAL,   /* the server's key or ALPN is wrong: exit 1, retrying cannot help */
} tun_lost;

static tun_lost quic_lost(const qk_event *ev)
{
    if (ev->remote && ev->app_error && ev->error_code == QK_TUNNEL_ERR_AUTH) return TUN_LOST_DENIED;
    /* RFC 9000 §20.1 CRYPTO_ERROR (0x100 + TLS alert): the TLS handshake
     * refused the server's key (pin) or the server refused us (ALPN). */
    if (!ev->app_error && ev->error_code >= 0x100 && ev->error_code <= 0x1ff) return TUN_LOST_FATAL;
    if (ev->remote && ev->app_error && ev->error_code == 0) return TUN_LOST_AT_ONCE;
    return TUN_LOST_RETRY;
}

/* Client: the session ended (or never came up). Redial unless told not to. */
static void conn_lost(tun *s, tun_lost how)
{
    s->conn = NULL;
    s->sess = NULL;
    if (s->stopping) return;
    if (how == TUN_LOST_RETRY && s->cars.n > 1 && s->cars.cur + 1 < s->cars.n) {
        if (s->listening) qk_tunnel_set_session(s->t, NULL, NULL);
        if (tun_auto_next(s, s->up_carrier < 0 ? "no session" : "lost")) return; /* at once */
    }
    if (how == TUN_LOST_DENIED || how == TUN_LOST_FATAL || !s->o->reconnect_max_ns) {
        s->exit_code = how == TUN_LOST_DENIED ? TUN_EXIT_DENIED : TUN_EXIT_CONN;
        stop(s);
        return;
    }
    if (s->listening) qk_tunnel_set_session(s->t, NULL, NULL);
    if (how == TUN_LOST_AT_ONCE) /* the server stopped: its sessions went with it */
        qk_tunnel_forget_session(s->t, "the server closed the connection (stopping)");
    schedule_redial(s, how == TUN_LOST_AT_ONCE);
}

/* A connection closed before its handshake completed: one line saying why
 * and what to fix (client) or with the peer's address (server). */
static bool tun_closed_before_handshake(tun *s, const qk_event *ev)
{
    if (!ev->conn || qk_conn_alpn(ev->conn)) return false;
    if (s->o->server) return cli_log_failed_handshake(stderr, s->who, ev);
    char msg[600];
    cli_handshake_failed(ev, s->o->pin ? CLI_VERIFY_PIN : CLI_VERIFY_INSECURE, msg, sizeof msg);
    fprintf(stderr, "%s: %s\n", s->who, msg);
    return true;
}

static int tun_start_tcp(tun *s);

static bool tun_app(void *ctx, qk_endpoint *ep, qk_time now)
{
    (void)now;
    tun *s = ctx;
    bool wrote = false;
    qk_event ev;
    while (qk_endpoint_poll_event(ep, &ev)) {
        if (ev.conn && ev.conn == s->probe) {
            tun_auto_probe_event(s, &ev);
            continue;
        }
        if (ev.type == QK_EV_CONNECTED) on_connected(s, ev.conn);
        tun_h3 *w = tun_h3_of(s, ev.conn);
        if (w)
            wrote = tun_h3_on_event(w, s->t, &ev) || wrote;
        else if (s->t && !(ev.conn && qk_conn_user(ev.conn))) /* not an h3 one that failed */
            wrote = qk_tunnel_on_event(s->t, &ev) || wrote;
        if (w && ev.type == QK_EV_DATAGRAM)
            tun_h3_datagram(w, s->udp, &ev); /* RFC 9297 HTTP Datagram */
        else
            qk_tunnel_udp_on_event(s->udp, &ev);
        if (ev.type == QK_EV_CLOSED) {
            bool clean = !ev.reason_err || (ev.app_error && ev.error_code == 0);
            if (tun_closed_before_handshake(s, &ev))
                ; /* one line that says what to fix */
            else if (!clean || !s->o->server)
                fprintf(stderr, "%s: connection closed%s%s: %s\n", s->who,
                        ev.remote ? " by the peer" : "", clean ? "" : " (error)",
                        ev.reason[0] ? ev.reason : "no reason given");
            if (s->o->server) track_conn(s, ev.conn, false);
            if (ev.conn == s->conn) conn_lost(s, quic_lost(&ev));
            if (ev.conn == s->left) s->left = NULL;
            if (w) {
                qk_conn_set_user(ev.conn, NULL);
                tun_h3_del(w);
            }
        }
    }
    if (!s->o->server && s->exit_code == TUN_EXIT_DENIED) stop(s);
    for (size_t i = 0; s->site && i < s->n_conns; i++) { /* the sites' responses */
        tun_h3 *sw = qk_conn_user(s->conns[i]);
        if (sw && tun_h3_flush(sw)) wrote = true;
    }
    return wrote;
}

static void on_tick(struct ev_loop *ev, ev_timer *w, int revents)
{
    (void)ev;
    (void)revents;
    tun *s = w->data;
    if (!s->t) return;
    qk_time now = qk_io_now();
    tun_h3 *hw = s->conn ? tun_h3_of(s, s->conn) : NULL; /* client: end idle UDP sessions */
    if (hw && s->udp)
        tun_h3_udp_sweep(hw, now, s->o->udp_idle_ns ? s->o->udp_idle_ns : 60 * QK_NS_PER_S);
    double dt = (double)(now - s->last_tick) / 1e9;
    s->last_tick = now;
    qk_tunnel_stats st;
    qk_tunnel_get_stats(s->t, &st);
    const char *label = s->o->server && s->cars.n > 1
                            ? "tunnel" /* a server of several carriers */
                            : tun_carriers[tun_auto_current(&s->cars)].rate_label; /* in use */
    if (!s->o->quiet && (st.tcp_to_quic_bytes != s->mark.tcp_to_quic_bytes ||
                         st.quic_to_tcp_bytes != s->mark.quic_to_tcp_bytes ||
                         st.flows_opened != s->mark.flows_opened)) {
        fprintf(stderr,
                "[%s] %.0f s: %zu flows open, %llu total (%llu refused, %llu aborted); "
                "tcp->%s %.2f Mbit/s, %s->tcp %.2f Mbit/s\n",
                s->o->server ? "tunnel server" : "tunnel client", (double)(now - s->start) / 1e9,
                qk_tunnel_flow_count(s->t), (unsigned long long)st.flows_opened,
                (unsigned long long)st.flows_refused, (unsigned long long)st.flows_aborted, label,
                (double)(st.tcp_to_quic_bytes - s->mark.tcp_to_quic_bytes) * 8 / 1e6 / dt, label,
                (double)(st.quic_to_tcp_bytes - s->mark.quic_to_tcp_bytes) * 8 / 1e6 / dt);
        fflush(stderr);
    }
    s->mark = st;
    if (s->o->stats) {
        qk_tunnel_udp_stats us = {0};
        size_t sessions = 0;
        qk_tunnel_udp_get_stats(s->udp, &us, &sessions);
        fprintf(stderr,
                "stats: t=%.0fs flows_open=%zu flows_opened=%llu flows_refused=%llu "
                "flows_aborted=%llu tcp_to_tunnel_bytes=%llu tunnel_to_tcp_bytes=%llu "
                "udp_sessions=%zu udp_up=%llu udp_down=%llu udp_dropped=%llu flows_resumed=%llu "
                "bytes_replayed=%llu sessions_resumed=%llu sessions_refused=%llu "
                "buffer_bytes=%llu buffer_peak_bytes=%llu carrier=%s carrier_switches=%llu "
                "carrier_probes=%llu carrier_probes_failed=%llu sessions_detached=%llu "
                "sessions_evicted=%llu\n",
                (double)(now - s->start) / 1e9, qk_tunnel_flow_count(s->t),
                (unsigned long long)st.flows_opened, (unsigned long long)st.flows_refused,
                (unsigned long long)st.flows_aborted, (unsigned long long)st.tcp_to_quic_bytes,
                (unsigned long long)st.quic_to_tcp_bytes, sessions,
                (unsigned long long)us.dgrams_up, (unsigned long long)us.dgrams_down,
                (unsigned long long)us.dgrams_dropped, (unsigned long long)st.flows_resumed,
                (unsigned long long)st.bytes_replayed, (unsigned long long)st.sessions_resumed,
                (unsigned long long)st.sessions_refused, (unsigned long long)st.buffer_bytes,
                (unsigned long long)st.buffer_peak_bytes,
                s->o->server ? "server" : tun_carriers[tun_auto_current(&s->cars)].name,
                (unsigned long long)s->cars.switches, (unsigned long long)s->cars.probes,
                (unsigned long long)s->cars.probes_failed, (unsigned long long)st.sessions_detached,
                (unsigned long long)st.sessions_evicted);
        fflush(stderr);
        tun_hop_print_stats(s->hop, s->ep, s->conn, now - s->start, stderr);
    }
}

/* --log FILE: (re)open it as stderr. Returns 0 or -1 (errno kept). */
static int open_log(const char *path)
{
    return freopen(path, "a", stderr) ? 0 : -1;
}

static void on_sighup(struct ev_loop *ev, ev_signal *w, int revents)
{
    (void)ev;
    (void)revents;
    tun *s = w->data;
    if (s->o->log_file && open_log(s->o->log_file) == 0)
        fprintf(stderr, "%s: log reopened (SIGHUP)\n", s->who);
}

static void signals_start(tun *s, struct ev_loop *evl)
{
    ev_signal_init(&s->sigint, on_signal, SIGINT);
    ev_signal_init(&s->sigterm, on_signal, SIGTERM);
    ev_signal_init(&s->sighup, on_sighup, SIGHUP);
    s->sigint.data = s->sigterm.data = s->sighup.data = s;
    ev_signal_start(evl, &s->sigint);
    ev_signal_start(evl, &s->sigterm);
    ev_signal_start(evl, &s->sighup);
}

static void signals_stop(tun *s, struct ev_loop *evl)
{
    ev_signal_stop(evl, &s->sigint);
    ev_signal_stop(evl, &s->sigterm);
    ev_signal_stop(evl, &s->sighup);
}

/* Returns 0, or QK_ERR_IO when --keylog cannot be opened. */
static int config(qk_config *cfg, const tun_opts *o)
{
    qk_config_default(cfg);
    cfg->server = o->server;
    cfg->alpn[0] = QK_H3_ALPN; /* RFC 9114 §3.1; the DNS carrier keeps its own */
    cfg->alpn_count = 1;
    cfg->rng = cli_rng;
    cfg->cc = o->cc;
    cfg->cc_max_rate_bps = o->bandwidth_bps;
    int rc = qk_io_log_files(cfg, o->qlog_dir, o->keylog); /* else $SSLKEYLOGFILE */
    /* Unacknowledged bytes per flow: in flight plus what waits behind a loss
     * until its retransmission is acknowledged (about two pipes at 1 % loss on
     * a 100 Mbit/s x 50 ms path): with the library's 1 MiB default a 50 MB
     * download through bench/tunnel.sh's 1 % path took 7.9-8.3 s, with 4 MiB
     * 5.9-6.3 s (BBR). perf and serve use 4 MiB too. The flow's replay
     * buffer (--session-buffer) holds the same bytes until the far end wrote
     * them to TCP, so one bound serves both: a larger --session-buffer for a
     * longer, fatter or lossier pipe raises both. */
    cfg->max_stream_send_buffer_bytes =
        o->flow_buffer_bytes ? o->flow_buffer_bytes : QK_TUNNEL_DEFAULT_FLOW_BUFFER_BYTES;
    /* A stream takes the peer's credit plus this, not its whole buffer: the
     * flow reads TCP only while its stream takes more (src/tunnel/tunnel.c
     * qk_tun_pump_up), so ten fresh downloads from a fast source no longer
     * read and copy 4 MiB each before the path has carried the first
     * 100 KB (the loop's turns grew to 50-100 ms, delaying ACKs). */
    cfg->send_credit_lookahead_bytes = TUN_SEND_LOOKAHEAD_BYTES;
    /* Receive windows to start with (RFC 9000 §4.1: credit is the receiver's
     * to give). The library's 64 KiB / 256 KiB grow by auto-tuning ~1.3x per
     * RTT, slower than a sender's startup doubles: through bench/tunnel.sh's
     * 100 Mbit/s x 50 ms path a download sent STREAM_DATA_BLOCKED for its
     * first second (qlog) at 30-60 Mbit/s. Credit costs no memory until
     * bytes arrive; the connection window bounds what all flows hold. */
    cfg->initial_max_stream_data_bytes = TUN_INITIAL_STREAM_WINDOW_BYTES;
    cfg->initial_max_data_bytes = TUN_INITIAL_CONN_WINDOW_BYTES;
    cfg->keep_alive_ns = o->keep_alive_ns;
    cfg->idle_timeout_ns = o->idle_timeout_ns;
    cfg->max_streams_bidi = o->max_flows ? o->max_flows : QK_TUNNEL_DEFAULT_MAX_FLOWS;
    cfg->insecure = o->insecure;
    cli_admission_apply(&o->admission, cfg); /* client: only --handshake-timeout */
    if (o->udp_fwd_str) {                    /* RFC 9221 §3: advertise max_datagram_frame_size */
        cfg->max_datagram_frame_bytes = 1500;
        cfg->max_pending_datagrams = 4096;
    }
    if (o->dns.on) tun_dns_config(&o->dns, o->server, cfg);
    return rc;
}

/* qk_tunnel_udp's frames: over HTTP/3 as HTTP Datagrams of CONNECT-UDP
 * requests (RFC 9298), on the DNS carrier as they are. */
static int tun_udp_send(void *ctx, qk_conn *c, const uint8_t *frame, size_t len, uint8_t urgency)
{
    tun *s = ctx;
    tun_h3 *w = tun_h3_of(s, c);
    return w ? tun_h3_udp_send(w, frame, len, urgency) : qk_datagram_send(c, frame, len, urgency);
}

/* --udp-listen / --udp-to: UDP sessions in DATAGRAM frames. */
static int start_udp(tun *s)
{
    qk_tunnel_udp_config uc = {.server = s->o->server,
                               .addr = s->o->udp_fwd,
                               .idle_ns = s->o->udp_idle_ns,
                               .urgency = (uint8_t)s->o->udp_urgency,
                               .kick = do_kick,
                               .kick_ctx = s,
                               .log = s->o->quiet ? NULL : tun_log,
                               .log_ctx = s,
                               .send = tun_udp_send,
                               .send_ctx = s};
    int rc = qk_tunnel_udp_new(s->evl, &uc, &s->udp);
    if (rc) {
        fprintf(stderr, "%s: cannot %s UDP %s: %m\n", s->who, s->o->server ? "use" : "listen on",
                s->o->udp_fwd_str);
        return rc;
    }
    if (!s->o->server) {
        qk_addr la;
        char buf[QK_ADDR_STRLEN];
        qk_tunnel_udp_local_addr(s->udp, &la);
        if (qk_addr_format(&la, buf, sizeof buf) < 0) snprintf(buf, sizeof buf, "?");
        printf("tunnel: udp listening on %s\n", buf);
        fflush(stdout);
    }
    return 0;
}

/* The tunnel core's settings from the command line, whatever the carrier. */
static qk_tunnel_config tunnel_config(tun *s)
{
    return (qk_tunnel_config){.server = s->o->server,
                              .target = s->o->tcp,
                              .max_flows = s->o->max_flows,
                              .kick = do_kick,
                              .kick_ctx = s,
                              .hold_ns = s->o->hold_ns,
                              .socks5 = s->o->socks5,
                              .allow = s->o->allow,
                              .n_allow = s->o->n_allow,
                              .socks_user = s->o->socks_user[0] ? s->o->socks_user : NULL,
                              .socks_pass = s->o->socks_pass,
                              .secret = s->o->secret,
                              .secret_len = s->o->secret_len,
                              .on_auth = on_auth,
                              .auth_ctx = s,
                              .log = s->o->quiet ? NULL : tun_log,
                              .log_ctx = s,
                              .flow_buffer_bytes = (size_t)s->o->flow_buffer_bytes,
                              .session_buffer_bytes = (size_t)s->o->session_buffer_bytes,
                              .session_linger_ns = s->o->session_linger_ns,
                              .session_max = s->o->session_max};
}

/* Port hopping asks for the client's connection (tunnel_hop.c). */
static qk_conn *hop_conn(void *ctx, size_t *flows_open)
{
    tun *s = ctx;
    *flows_open = s->t ? qk_tunnel_flow_count(s->t) : 0;
    return s->stopping ? NULL : s->conn;
}

static int run(tun *s, qk_udp *u, const qk_config *cfg)
{
    qk_io_ep_driver *drv = NULL;
    int rc = s->o->dns.on
                 ? tun_dns_new(&s->o->dns, s->o->server, s->ep, u, tun_app, s, &s->dns)
                 : qk_io_ep_driver_new(s->ep, cfg->max_udp_payload_bytes, tun_app, s, &drv);
    if (rc) return rc;
    if (s->dns)
        rc = qk_io_loop_new(u, &tun_dns_ops, s->dns, NULL, &s->loop);
    else
        rc = qk_io_ep_driver_loop_new(drv, u, NULL, &s->loop);
    if (rc) {
        tun_dns_del(s->dns);
        qk_io_ep_driver_del(drv);
        return rc;
    }
    if (s->dns) tun_dns_attach(s->dns, s->loop);
    struct ev_loop *evl = qk_io_loop_ev(s->loop);
    s->evl = evl;
    qk_tunnel_config tc = tunnel_config(s);
    rc = qk_tunnel_new(evl, &tc, &s->t);
    if (!rc && s->o->server && s->cars.n > 1 && tun_auto_has(&s->cars, TUN_CARRIER_TCP))
        rc = tun_start_tcp(s); /* the same tunnel: a session resumes over any carrier */
    if (!rc && s->o->server && s->cars.n > 1 && tun_auto_has(&s->cars, TUN_CARRIER_DNS))
        rc = tun_auto_start_dns(s);
    if (!rc && s->o->udp_fwd_str) rc = start_udp(s);
    if (!rc) rc = tun_hop_start(s->hop, s->loop, hop_conn, s);
    if (!rc && !s->o->server) rc = tun_dial(s);
    if (!rc) {
        signals_start(s, evl);
        ev_timer_init(&s->tick, on_tick, 1.0, 1.0);
        s->tick.data = s;
        ev_timer_start(evl, &s->tick);
        s->start = s->last_tick = qk_io_now();
        rc = qk_io_loop_run(s->loop);
        ev_timer_stop(evl, &s->tick);
        ev_timer_stop(evl, &s->probe_w);
        signals_stop(s, evl);
    }
    tun_hop_stop(s->hop);
    qk_tunnel_tcp_set_tunnel(s->tcp, NULL);
    qk_tunnel_del(s->t);
    s->t = NULL;
    qk_tunnel_tcp_del(s->tcp);
    s->tcp = NULL;
    tun_auto_stop_dns(s);
    qk_tunnel_udp_del(s->udp);
    s->udp = NULL;
    tun_dns_del(s->dns); /* before the loop: it stops its watchers in it */
    s->dns = NULL;
    if (s->o->stats && s->o->server && s->ep) cli_print_endpoint_stats(stderr, s->ep);
    qk_io_loop_del(s->loop);
    qk_io_ep_driver_del(drv);
    return rc;
}

/* --carrier tcp: the client's yamux session came up (authenticate, listen)
 * or ended (redial, or end as the server said). */
static void tcp_on_session(void *ctx, qk_yamux *y, bool up, const char *why)
{
    tun *s = ctx;
    if (tun_auto_tcp_probe(s, y)) return; /* a probe from dns (tunnel_auto.c) */
    if (y) {
        tun_session_up(s, &qk_tunnel_carrier_yamux, y);
        return;
    }
    if (s->cars.n > 1 && tun_auto_current(&s->cars) != TUN_CARRIER_TCP) {
        fprintf(stderr, "%s: tcp carrier session ended (%s)\n", s->who, why ? why : "moved");
        return; /* the one we moved away from */
    }
    fprintf(stderr, "%s: %s: %s\n", s->who, up ? "connection closed" : "cannot connect",
            why ? why : "no reason given");
    uint32_t code = 0;
    qk_tunnel_tcp_end end = qk_tunnel_tcp_ended(s->tcp, &code);
    conn_lost(s, end == QK_TUNNEL_TCP_BAD_KEY  ? TUN_LOST_FATAL
                 : end != QK_TUNNEL_TCP_GOAWAY ? TUN_LOST_RETRY
                 : code == QK_TUNNEL_ERR_AUTH  ? TUN_LOST_DENIED
                                               : TUN_LOST_AT_ONCE);
}

/* The TLS/TCP carrier in s->evl for tunnel s->t (server: listening on the
 * --listen address, TCP; client: dialling --connect). Returns 0 or a QK_ERR_*. */
static int tun_start_tcp(tun *s)
{
    const qk_config *cfg = s->cfg;
    qk_tunnel_tcp_config yc = {.server = s->o->server,
                               .addr = s->o->udp,
                               .cert_pem = cfg->cert_pem,
                               .key_pem = cfg->key_pem,
                               .cert_file = cfg->cert_file,
                               .key_file = cfg->key_file,
                               .pin_sha256 = cfg->has_pin ? cfg->pin_sha256 : NULL,
                               .fixed_window = s->o->fixed_window,
                               .max_streams = s->o->max_flows,
                               .on_session = tcp_on_session,
                               .ctx = s};
    int rc = qk_tunnel_tcp_new(s->evl, s->t, &yc, &s->tcp);
    if (rc) {
        fprintf(stderr, "%s: cannot start the TLS/TCP carrier on %s: %m\n", s->who, s->o->udp_str);
        return rc;
    }
    if (s->o->server) {
        qk_addr la;
        char lbuf[QK_ADDR_STRLEN];
        qk_tunnel_tcp_local_addr(s->tcp, &la);
        if (qk_addr_format(&la, lbuf, sizeof lbuf) < 0) snprintf(lbuf, sizeof lbuf, "?");
        printf("listening on %s (yamux/TLS/TCP) -> %s (TCP)\n", lbuf, s->o->tcp_str);
        fflush(stdout);
    }
    return 0;
}

/* --carrier tcp: yamux over TLS/TCP in a plain libev loop. */
static int run_tcp(tun *s, const qk_config *cfg)
{
    s->evl = ev_loop_new(EVFLAG_AUTO);
    if (!s->evl) return QK_ERR_NOMEM;
    (void)cfg;
    qk_tunnel_config tc = tunnel_config(s);
    int rc = qk_tunnel_new(s->evl, &tc, &s->t);
    if (!rc) rc = tun_start_tcp(s);
    if (!rc) {
        signals_start(s, s->evl);
        ev_timer_init(&s->tick, on_tick, 1.0, 1.0);
        s->tick.data = s;
        ev_timer_start(s->evl, &s->tick);
        s->start = s->last_tick = qk_io_now();
        ev_run(s->evl, 0);
        ev_timer_stop(s->evl, &s->tick);
        signals_stop(s, s->evl);
    }
    qk_tunnel_tcp_set_tunnel(s->tcp, NULL);
    qk_tunnel_del(s->t);
    s->t = NULL;
    qk_tunnel_tcp_del(s->tcp);
    s->tcp = NULL;
    ev_loop_destroy(s->evl);
    return rc;
}

/* --carrier udp|dns: the UDP socket, the endpoint, the loop. Returns 0 or a QK_ERR_*. */
static int run_udp(tun *s, const qk_config *cfg)
{
    const tun_opts *o = s->o;
    qk_udp *u = NULL;
    qk_addr bind_addr;
    memset(&bind_addr, 0, sizeof bind_addr);
    if (o->server)
        bind_addr = o->udp;
    else
        bind_addr.ss.ss_family = o->udp.ss.ss_family;
    bind_addr.len = o->udp.len;
    int rc = qk_udp_open(&bind_addr,
                         (bind_addr.ss.ss_family == AF_INET6 ? QK_UDP_DUALSTACK : 0) |
                             (o->server ? 0 : QK_UDP_RECVERR) | /* client: ICMP fails fast */
                             (o->no_gso ? QK_UDP_NO_GSO : 0),
                         &u);
    if (rc) fprintf(stderr, "%s: cannot open a UDP socket for %s: %m\n", s->who, o->udp_str);
    if (!rc) rc = tun_hop_new(&o->hop, o->server, s->who, &s->hop);
    if (!rc)
        rc = tun_hop_open(s->hop, &o->udp, u,
                          bind_addr.ss.ss_family == AF_INET6 ? QK_UDP_DUALSTACK : 0);
    if (!rc) {
        s->ep = cli_endpoint_new(cfg, s->who);
        if (!s->ep) rc = QK_ERR_CONFIG;
    }
    if (!rc && o->server) {
        qk_addr la;
        char lbuf[QK_ADDR_STRLEN];
        qk_udp_local_addr(u, &la);
        if (qk_addr_format(&la, lbuf, sizeof lbuf) < 0) snprintf(lbuf, sizeof lbuf, "?");
        printf("listening on %s (QUIC, ALPN %s) -> %s (TCP)\n", lbuf,
               o->dns.on ? TUN_ALPN : QK_H3_ALPN, o->tcp_str);
        fflush(stdout);
    }
    h3_site site;
    if (!rc && o->server && h3_site_init(&site, s->who, o->masquerade)) {
        fprintf(stderr, "%s: --masquerade %s: %s\n", s->who, o->masquerade,
                errno == ENOTDIR ? "not a directory" : strerror(errno));
        rc = QK_ERR_CONFIG;
    }
    if (!rc && o->server) {
        site.quiet = o->quiet;
        s->site = &site;
    }
    if (!rc) rc = run(s, u, cfg);
    tun_h3_release(s);
    if (s->site) h3_site_release(s->site);
    s->site = NULL;
    qk_endpoint_del(s->ep);
    tun_hop_del(s->hop);
    s->hop = NULL;
    qk_udp_close(u);
    return rc;
}

/* Server without --cert: the key in --state-dir (made there on first start).
 * The default directory unusable: a fresh key for this run, with a warning.
 * Returns 0 or TUN_EXIT_LOCAL (--state-dir given and unusable). */
static int server_identity(tun_opts *o, const char *who, char *cert, char *key, size_t cap)
{
    if (!o->server || o->cert_file) return 0;
    char dir[1024];
    if (!o->state_dir && cli_state_dir_default(dir, sizeof dir)) {
        fprintf(stderr, "%s: no state directory (HOME unset): a fresh key for this run\n", who);
        return 0;
    }
    if (cli_identity_ensure(who, o->state_dir ? o->state_dir : dir, cert, key, cap)) {
        if (o->state_dir) return TUN_EXIT_LOCAL;
        fprintf(stderr,
                "%s: a fresh key for this run only (its pin changes at every start); give "
                "--state-dir DIR or --cert/--key\n",
                who);
        return 0;
    }
    o->cert_file = cert;
    o->key_file = key;
    return 0;
}

/* What tunnel_auto.c calls back. */
static const tun_hooks tun_hooks_main = {
    .dial = tun_dial, .start_tcp = tun_start_tcp, .session_up = tun_session_up, .app = tun_app};

static int tunnel_main(tun_opts *o)
{
    if (cli_check_dir("quack tunnel", "--qlog", o->qlog_dir) ||
        cli_check_file("quack tunnel", "--cert", o->cert_file) ||
        cli_check_file("quack tunnel", "--key", o->key_file))
        return TUN_EXIT_USAGE;
    if (o->log_file && open_log(o->log_file)) {
        fprintf(stderr, "quack tunnel: cannot open --log %s: %m\n", o->log_file);
        return TUN_EXIT_LOCAL;
    }
    tun s;
    memset(&s, 0, sizeof s);
    s.o = o;
    s.who = o->server ? "quack tunnel server" : "quack tunnel client";
    if (o->insecure) cli_warn_insecure(s.who);
    char cert_path[1100], key_path[1100];
    if (server_identity(o, s.who, cert_path, key_path, sizeof cert_path)) return TUN_EXIT_LOCAL;
    qk_config cfg;
    if (config(&cfg, o)) {
        fprintf(stderr, "%s: cannot open --keylog %s for appending: %m\n", s.who, o->keylog);
        return TUN_EXIT_LOCAL;
    }
    char *cert_pem = NULL, *key_pem = NULL;
    int rc = 0;
    if (o->server) rc = cli_load_cert(s.who, o->cert_file, o->key_file, &cfg, &cert_pem, &key_pem);
    if (!rc && o->pin) {
        if (qk_pin_parse(o->pin, cfg.pin_sha256)) {
            free(cert_pem);
            free(key_pem);
            return bad("--pin wants 64 hex digits, not '%s'", o->pin);
        }
        cfg.has_pin = true;
    }
    s.hooks = &tun_hooks_main;
    s.cfg = &cfg;
    s.cars = o->cars;
    s.up_carrier = -1;
    if (!rc) /* the carrier switch */
        rc = o->carrier == TUN_CARRIER_TCP ? run_tcp(&s, &cfg) : run_udp(&s, &cfg);
    free(cert_pem);
    free(key_pem);
    free(s.conns);
    return rc ? TUN_EXIT_LOCAL : s.exit_code;
}

int qk_cmd_tunnel(int argc, char **argv)
{
    tun_argv args;
    int rc = tun_config_merge(argc, argv, tun_flag_names, &args);
    if (rc) return rc;
    tun_opts o;
    memset(&o, 0, sizeof o);
    int prc = parse(&o, args.argc, args.argv, args.where);
    rc = prc ? (prc < 0 ? 0 : prc) : tunnel_main(&o);
    tun_argv_free(&args);
    return rc;
}
