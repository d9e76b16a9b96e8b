/* SPDX-License-Identifier: MIT */
/* Error-code mapping: QK_ERR_* <-> RFC 9000 §20.1 transport error codes. */
#include "qk_test.h"
#include <quack/common.h>
#include <string.h>

static void test_transport_mapping(void **state)
{
    (void)state;
    assert_int_equal(qk_err_transport_code(QK_ERR_FLOW_CONTROL), 0x03);
    assert_int_equal(qk_err_transport_code(QK_ERR_FRAME_ENCODING), 0x07);
    assert_int_equal(qk_err_transport_code(QK_ERR_PROTOCOL_VIOLATION), 0x0a);
    assert_int_equal(qk_err_transport_code(QK_ERR_NO_VIABLE_PATH), 0x10);
    assert_int_equal(qk_err_transport_code(QK_ERR_CRYPTO_ALERT(120)), 0x178);
    assert_int_equal(qk_err_transport_code(QK_ERR_TRUNCATED), 0x07);
    assert_int_equal(qk_err_transport_code(QK_ERR_NOMEM), 0x01);
    for (uint64_t code = 1; code <= 0x1ff; code++)
        assert_int_equal(qk_err_transport_code(qk_err_from_transport_code(code)), code);
    assert_int_equal(qk_err_from_transport_code(0x4000), QK_ERR_PROTOCOL_VIOLATION);
}

static void test_strerror(void **state)
{
    (void)state;
    assert_string_equal(qk_strerror(QK_ERR_FLOW_CONTROL), "FLOW_CONTROL_ERROR");
    assert_non_null(qk_strerror(-999));
    assert_true(strlen(qk_strerror(QK_ERR_CRYPTO_ALERT(40))) > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_transport_mapping),
        cmocka_unit_test(test_strerror),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
