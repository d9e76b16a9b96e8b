/* SPDX-License-Identifier: MIT */
/* Fuzz the DNS message codec (src/dns/msg.c) and the carrier's decoders
 * (src/dns/carrier.c): any input must decode or fail cleanly, never crash,
 * hang or read out of bounds. A decoded message is re-encoded (question,
 * TXT strings) and decoded again. */
#include <stdlib.h>
#include <string.h>

#include "dns/carrier.h"
#include "dns/msg.h"

static qk_dns_server *srv;
static qk_dns_client cli;
static qk_time now;

/* The carrier's two decoders: the server taking a query, the client an answer. */
static void carrier(const uint8_t *data, size_t size)
{
    if (!srv) {
        qk_dns_server_config cfg = {.domain = "t.example.com", .max_clients = 4};
        if (qk_dns_server_new(&cfg, &srv) || qk_dns_client_init(&cli, "t.example.com", 0, 1))
            abort();
    }
    qk_addr from = {.len = sizeof(struct sockaddr_storage)};
    qk_dns_upstream up;
    now += 50 * QK_NS_PER_MS;
    if (qk_dns_server_on_query(srv, data, size, &from, now, &up) == 1) {
        if (up.len > 200) abort(); /* at most one name's worth */
        qk_dns_server_push(srv, &up.client, up.data, up.len);
    }
    uint8_t buf[2048];
    qk_addr to;
    while (qk_dns_server_next_response(srv, now, buf, sizeof buf, &to) > 0) {
    }
    (void)qk_dns_client_response(&cli, data, size, NULL, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    carrier(data, size);
    qk_dns_msg m;
    if (qk_dns_decode(data, size, &m)) return 0;
    uint8_t out[4096], txt[65536];
    for (size_t i = 0; i < m.n_an; i++)
        if (m.an[i].type == QK_DNS_TYPE_TXT)
            (void)qk_dns_txt_read(m.an[i].rdata, m.an[i].rdlen, txt, sizeof txt);
    if (!m.has_question) return 0;
    char text[QK_DNS_MAX_NAME_BYTES * 4 + 1];
    (void)qk_dns_name_to_text(&m.qname, text, sizeof text);
    qk_wr w = qk_wr_make(out, sizeof out);
    if (!qk_dns_put_header(&w, m.id, m.flags, 1, 0, 0, m.has_edns) ||
        !qk_dns_put_question(&w, &m.qname, m.qtype, m.qclass) ||
        (m.has_edns && !qk_dns_put_opt(&w, m.edns_size)))
        abort();
    qk_dns_msg m2;
    if (qk_dns_decode(out, (size_t)(w.p - out), &m2)) abort();
    if (m2.qname.len != m.qname.len || memcmp(m2.qname.wire, m.qname.wire, m.qname.len)) abort();
    return 0;
}
