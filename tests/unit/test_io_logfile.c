/* SPDX-License-Identifier: MIT */
/* src/io/logfile.c: the CLI's files behind the library's log writers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <quack/io.h>

/* qlog: a trace per name, bytes appended in order, closed at the end. */
static void test_qlog_files(void **state)
{
    (void)state;
    char dir[] = "/tmp/qk_qlogdir_XXXXXX";
    assert_non_null(mkdtemp(dir));
    qk_config cfg;
    qk_config_default(&cfg);
    assert_int_equal(qk_io_log_files(&cfg, dir, NULL), 0);
    assert_non_null(cfg.qlog_open);
    void *h = cfg.qlog_open(cfg.qlog_ctx, "abcd_client");
    assert_non_null(h);
    cfg.qlog_write(h, "one\n", 4);
    cfg.qlog_write(h, "two\n", 4);
    cfg.qlog_close(h);
    char path[512], buf[64] = {0};
    snprintf(path, sizeof path, "%s/abcd_client.sqlog", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    assert_int_equal(fread(buf, 1, sizeof buf - 1, f), 8);
    fclose(f);
    assert_string_equal(buf, "one\ntwo\n");
    unlink(path);
    rmdir(dir);
    /* No directory: no qlog. */
    qk_config none;
    qk_config_default(&none);
    unsetenv("SSLKEYLOGFILE");
    assert_int_equal(qk_io_log_files(&none, NULL, NULL), 0);
    assert_null(none.qlog_open);
    assert_null(none.keylog);
    assert_int_equal(qk_io_log_files(NULL, dir, NULL), QK_ERR_INVALID_ARG);
}

/* Key log: $SSLKEYLOGFILE when no path is given, one line per call. */
static void test_keylog_env(void **state)
{
    (void)state;
    char path[] = "/tmp/qk_keylog_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(setenv("SSLKEYLOGFILE", path, 1), 0);
    qk_config cfg;
    qk_config_default(&cfg);
    assert_int_equal(qk_io_log_files(&cfg, NULL, NULL), 0);
    unsetenv("SSLKEYLOGFILE");
    assert_non_null(cfg.keylog);
    cfg.keylog(cfg.keylog_ctx, "CLIENT_RANDOM aa bb");
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[64] = {0};
    assert_non_null(fgets(line, sizeof line, f));
    fclose(f);
    assert_string_equal(line, "CLIENT_RANDOM aa bb\n");
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qlog_files),
        cmocka_unit_test(test_keylog_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
