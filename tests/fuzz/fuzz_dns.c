/* Fuzz the DNS message codec (src/dns/msg.c) and the carrier's decoders
 * (src/dns/carrier.c): any input must decode or fail cleanly, never crash,
 * hang or read out of bounds. A decoded message is re-encoded (question,
 * TXT strings) and decoded again. */
#include <stdlib.h>
#include <string.h>

#include "dns/msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
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
