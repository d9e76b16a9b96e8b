/* SPDX-License-Identifier: MIT */
/* QUIC-LB configuration files (quiclb_config.c): a [quic-lb] section read
 * into a qk_quiclb_config, and each way a file can be wrong refused with
 * QK_ERR_CONFIG and a message naming the line, the problem and the fix. */
#include "qk_test.h"

#include <quack/quiclb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int parse(const char *text, qk_quiclb_config *cfg, char *err, size_t cap)
{
    return qk_quiclb_config_parse(text, strlen(text), "lb.ini", cfg, err, cap);
}

static void test_good(void **state)
{
    (void)state;
    qk_quiclb_config cfg;
    char err[256];
    const char *text = "; the servers' file\n"
                       "[quic-lb]\n"
                       "config_id = 2   ; rotation\n"
                       "server_id = ed793a51\n"
                       "nonce_len = 12\n"
                       "key = 8f:95:f0:92:45:76:5f:80:25:69:34:e5:0c:66:20:7f\n"
                       "encode_length = no\n";
    assert_int_equal(parse(text, &cfg, err, sizeof err), 0);
    assert_string_equal(err, "");
    assert_int_equal(cfg.config_id, 2);
    assert_int_equal(cfg.server_id_len, 4);
    assert_int_equal(cfg.nonce_len, 12);
    assert_false(cfg.encode_len);
    assert_true(cfg.has_key);
    const uint8_t key[16] = {0x8f, 0x95, 0xf0, 0x92, 0x45, 0x76, 0x5f, 0x80,
                             0x25, 0x69, 0x34, 0xe5, 0x0c, 0x66, 0x20, 0x7f};
    const uint8_t sid[4] = {0xed, 0x79, 0x3a, 0x51};
    assert_memory_equal(cfg.key, key, 16);
    assert_memory_equal(cfg.server_id, sid, 4);

    /* A load balancer's file: server_id_len instead of server_id, no key,
     * the length self-description by default. */
    assert_int_equal(
        parse("[quic-lb]\nconfig_id=0\nserver_id_len=3\nnonce_len=4\n", &cfg, err, sizeof err), 0);
    assert_int_equal(cfg.server_id_len, 3);
    assert_false(cfg.has_key);
    assert_true(cfg.encode_len);
    /* Both given and agreeing; hex with 0x; the limit sum 19. */
    assert_int_equal(parse("[quic-lb]\nconfig_id=6\nserver_id=0x0102030405060708090a0b0c0d0e0f\n"
                           "server_id_len=15\nnonce_len=4\r\n",
                           &cfg, err, sizeof err),
                     0);
    assert_int_equal(cfg.server_id_len, 15);
    assert_int_equal(cfg.server_id[14], 0x0f);
    /* The parsed configuration drives the codec. */
    qk_quiclb *lb = NULL;
    assert_int_equal(qk_quiclb_new(&cfg, &lb), 0);
    uint8_t cid[20], got[15];
    uint64_t rs = 3;
    assert_int_equal(qk_quiclb_encode(lb, NULL, qk_test_rng, &rs, cid, sizeof cid), 20);
    assert_int_equal(qk_quiclb_decode(lb, cid, 20, got, NULL), 15);
    assert_memory_equal(got, cfg.server_id, 15);
    qk_quiclb_del(lb);
}

/* Each bad file and a part of the message it must produce. */
static const struct {
    const char *text, *msg;
} bad[] = {
    {"[quic-lb]\nconfig_id = 0\nserver_id = 01\nnonce_len = 8\nnonse_len = 4\n",
     "lb.ini:5: unknown key 'nonse_len' in [quic-lb]: the keys are config_id, server_id"},
    {"[lb]\nconfig_id = 0\n", "lb.ini:2: unknown section [lb]: the only section is [quic-lb]"},
    {"config_id = 0\n", "lb.ini:1: 'config_id' is outside a section: put it under [quic-lb]"},
    {"[quic-lb]\nconfig_id = 0\nconfig_id = 1\n",
     "lb.ini:3: 'config_id' given twice (first on line 2): keep one"},
    {"[quic-lb]\n\n; c\nconfig_id = 7\n",
     "lb.ini:4: config_id = 7 is out of range: use 0..6 (7, 0b111, marks unroutable CIDs)"},
    {"[quic-lb]\nconfig_id = -1\n", "lb.ini:2: config_id = -1 is out of range"},
    {"[quic-lb]\nconfig_id = 99999999999\n", "lb.ini:2: config_id = 99999999999 is out of range"},
    {"[quic-lb]\nconfig_id = 0\nnonce_len = 3\n",
     "lb.ini:3: nonce_len = 3 is out of range: use 4..18 bytes"},
    {"[quic-lb]\nnonce_len = 19\n", "lb.ini:2: nonce_len = 19 is out of range: use 4..18 bytes"},
    {"[quic-lb]\nserver_id_len = 0\n", "lb.ini:2: server_id_len = 0 is out of range: use 1..15"},
    {"[quic-lb]\nserver_id_len = 16\n", "lb.ini:2: server_id_len = 16 is out of range"},
    {"[quic-lb]\nserver_id = 0102030405060708090a0b0c0d0e0f10\n",
     "lb.ini:2: server_id is longer than 15 bytes: use 1..15 bytes"},
    {"[quic-lb]\nserver_id = 12g4\n", "lb.ini:2: server_id is not hex"},
    {"[quic-lb]\nserver_id = 123\n", "lb.ini:2: server_id is not hex"},
    {"[quic-lb]\nserver_id = 12::34\n", "lb.ini:2: server_id is not hex"},
    {"[quic-lb]\nconfig_id = 0\nserver_id = 0102030405\nnonce_len = 15\n",
     "lb.ini:4: server ID length 5 + nonce length 15 is over 19 bytes"},
    {"[quic-lb]\nconfig_id = 0\nserver_id = 01\nnonce_len = 4\nkey = 00112233\n",
     "lb.ini:5: key must be 16 bytes (32 hex digits), got 4"},
    {"[quic-lb]\nkey = 8f95f09245765f80256934e50c66207f00\n",
     "lb.ini:2: key must be 16 bytes (32 hex digits), got more than 16"},
    {"[quic-lb]\nkey = 8f95f09245765f80256934e50c66207\n", "lb.ini:2: key is not hex"},
    {"[quic-lb]\nkey = secretsecretsecretsecretsecret12\n", "lb.ini:2: key is not hex"},
    {"[quic-lb]\nencode_length = maybe\n", "lb.ini:2: encode_length = maybe: use yes or no"},
    {"[quic-lb]\nconfig_id = 0\nserver_id = 0102\nserver_id_len = 3\nnonce_len = 4\n",
     "lb.ini:4: server_id_len = 3 but server_id (line 3) has 2 bytes"},
    {"[quic-lb]\nserver_id = 01\nnonce_len = 4\n",
     "lb.ini: missing config_id in [quic-lb]: add config_id = 0..6"},
    {"[quic-lb]\nconfig_id = 1\nserver_id = 01\n",
     "lb.ini: missing nonce_len in [quic-lb]: add nonce_len = 4..18"},
    {"[quic-lb]\nconfig_id = 1\nnonce_len = 4\n", "lb.ini: missing server_id in [quic-lb]"},
    {"", "lb.ini: no keys in a [quic-lb] section"},
    {"[quic-lb]\nconfig_id\n", "lb.ini:2: syntax error: lines are [quic-lb], key = value"},
    {"[quic-lb\n", "lb.ini:1: syntax error"},
};

static void test_errors(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        qk_quiclb_config cfg;
        char err[256];
        int rc = parse(bad[i].text, &cfg, err, sizeof err);
        if (rc != QK_ERR_CONFIG || !strstr(err, bad[i].msg))
            fail_msg("case %zu: rc %d, message \"%s\", wanted \"%s\"", i, rc, err, bad[i].msg);
        assert_int_equal(strncmp(err, bad[i].msg, 6), 0); /* starts with the file name */
    }
}

/* A line longer than inih's buffer is refused, not split into two lines. */
static void test_long_line(void **state)
{
    (void)state;
    char text[400];
    int n = snprintf(text, sizeof text, "[quic-lb]\n; %0300d\nconfig_id = 0\n", 0);
    assert_true(n > 0 && (size_t)n < sizeof text);
    qk_quiclb_config cfg;
    char err[256];
    assert_int_equal(parse(text, &cfg, err, sizeof err), QK_ERR_CONFIG);
    assert_non_null(strstr(err, "lb.ini:2: line longer than"));
}

/* Small message buffers are cut, never overrun; a NULL buffer is fine. */
static void test_err_buffers(void **state)
{
    (void)state;
    qk_quiclb_config cfg;
    char err[8];
    memset(err, 'x', sizeof err);
    assert_int_equal(parse("[x]\na=1\n", &cfg, err, 4), QK_ERR_CONFIG);
    assert_string_equal(err, "lb.");
    assert_int_equal(err[4], 'x');
    assert_int_equal(parse("[x]\na=1\n", &cfg, NULL, 0), QK_ERR_CONFIG);
    assert_int_equal(qk_quiclb_config_parse(NULL, 0, "n", &cfg, err, sizeof err),
                     QK_ERR_INVALID_ARG);
}

static void test_load_file(void **state)
{
    (void)state;
    char path[] = "/tmp/qk_quiclb_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *text = "[quic-lb]\nconfig_id = 3\nserver_id = aabb\nnonce_len = 6\n"
                       "key = 000102030405060708090a0b0c0d0e0f\n";
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    qk_quiclb_config cfg;
    char err[256];
    assert_int_equal(qk_quiclb_config_load(path, &cfg, err, sizeof err), 0);
    assert_int_equal(cfg.config_id, 3);
    assert_int_equal(cfg.server_id_len, 2);
    assert_int_equal(cfg.key[15], 0x0f);
    /* Errors name the path. */
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("[quic-lb]\nconfig_id = 8\n", f);
    fclose(f);
    assert_int_equal(qk_quiclb_config_load(path, &cfg, err, sizeof err), QK_ERR_CONFIG);
    char want[64];
    snprintf(want, sizeof want, "%s:2: config_id = 8 is out of range", path);
    assert_non_null(strstr(err, want));
    unlink(path);
    assert_int_equal(qk_quiclb_config_load(path, &cfg, err, sizeof err), QK_ERR_IO);
    assert_non_null(strstr(err, "cannot open: No such file or directory"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good),      cmocka_unit_test(test_errors),
        cmocka_unit_test(test_long_line), cmocka_unit_test(test_err_buffers),
        cmocka_unit_test(test_load_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
