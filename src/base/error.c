/* SPDX-License-Identifier: MIT */
/* Error codes: names and the RFC 9000 §20 wire codes of QK_ERR_* values. */
#include <quack/common.h>

uint64_t qk_err_transport_code(int err)
{
    if (QK_ERR_IS_TRANSPORT(err)) return (uint64_t)(-err - 0x1000);
    if (err == QK_ERR_TRUNCATED) return 0x07; /* RFC 9000 §12.4: FRAME_ENCODING_ERROR */
    if (err == 0) return 0;
    return 0x01; /* INTERNAL_ERROR */
}

int qk_err_from_transport_code(uint64_t code)
{
    if (code == 0) return QK_OK;
    if (code <= 0x1ff) return -(int)(0x1000 + code);
    return QK_ERR_PROTOCOL_VIOLATION;
}

const char *qk_strerror(int err)
{
    switch (err) {
    case QK_OK: return "success";
    case QK_ERR_INVALID_ARG: return "invalid argument";
    case QK_ERR_NOMEM: return "out of memory or bound reached";
    case QK_ERR_BUFFER_TOO_SMALL: return "buffer too small";
    case QK_ERR_TRUNCATED: return "input truncated";
    case QK_ERR_AGAIN: return "try again";
    case QK_ERR_STATE: return "invalid state";
    case QK_ERR_DECRYPT: return "decryption failed";
    case QK_ERR_TLS: return "TLS failure";
    case QK_ERR_VERSION: return "unsupported version";
    case QK_ERR_LIMIT: return "limit reached";
    case QK_ERR_CLOSED: return "closed";
    case QK_ERR_IO: return "I/O error";
    case QK_ERR_CONFIG: return "invalid configuration";
    case QK_ERR_NOT_FOUND: return "not found";
    case QK_ERR_TOO_LARGE: return "too large";
    case QK_ERR_UNSUPPORTED: return "unsupported";
    case QK_ERR_IGNORE: return "ignored";
    case QK_ERR_TIMEOUT: return "timed out";
    case QK_ERR_INTERNAL: return "INTERNAL_ERROR";
    case QK_ERR_CONNECTION_REFUSED: return "CONNECTION_REFUSED";
    case QK_ERR_FLOW_CONTROL: return "FLOW_CONTROL_ERROR";
    case QK_ERR_STREAM_LIMIT: return "STREAM_LIMIT_ERROR";
    case QK_ERR_STREAM_STATE: return "STREAM_STATE_ERROR";
    case QK_ERR_FINAL_SIZE: return "FINAL_SIZE_ERROR";
    case QK_ERR_FRAME_ENCODING: return "FRAME_ENCODING_ERROR";
    case QK_ERR_TRANSPORT_PARAMETER: return "TRANSPORT_PARAMETER_ERROR";
    case QK_ERR_CONNECTION_ID_LIMIT: return "CONNECTION_ID_LIMIT_ERROR";
    case QK_ERR_PROTOCOL_VIOLATION: return "PROTOCOL_VIOLATION";
    case QK_ERR_INVALID_TOKEN: return "INVALID_TOKEN";
    case QK_ERR_APPLICATION: return "APPLICATION_ERROR";
    case QK_ERR_CRYPTO_BUFFER: return "CRYPTO_BUFFER_EXCEEDED";
    case QK_ERR_KEY_UPDATE: return "KEY_UPDATE_ERROR";
    case QK_ERR_AEAD_LIMIT: return "AEAD_LIMIT_REACHED";
    case QK_ERR_NO_VIABLE_PATH: return "NO_VIABLE_PATH";
    default:
        if (err <= QK_ERR_CRYPTO_BASE && err >= -0x11ff) return "CRYPTO_ERROR (TLS alert)";
        return "unknown error";
    }
}
