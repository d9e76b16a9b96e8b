/* SPDX-License-Identifier: MIT */
/* A server's lasting identity: a key and self-signed certificate kept in a
 * state directory, so that the pin clients were given survives restarts
 * (quack tunnel server --state-dir, quack keygen). */
#ifndef QK_APPS_CLI_IDENTITY_H
#define QK_APPS_CLI_IDENTITY_H

#include <stdbool.h>
#include <stddef.h>

/* File names inside a state directory. */
#define CLI_IDENTITY_CERT "cert.pem"
#define CLI_IDENTITY_KEY  "key.pem"
/* Days a certificate made for a state directory is valid (clients pin the
 * key; the dates are not what they check). */
#define CLI_IDENTITY_DAYS 3650u

/* The default state directory into out: $XDG_STATE_HOME/quack when that is
 * set (an absolute path), else /var/lib/quack for root, else
 * $HOME/.local/state/quack. Returns 0, or -1 (no HOME, or it does not fit). */
int cli_state_dir_default(char *out, size_t cap);

/* DIR/cert.pem and DIR/key.pem into cert and key (cap bytes each). Returns
 * 0 or -1 (too long). */
int cli_identity_paths(const char *dir, char *cert, size_t cert_cap, char *key, size_t key_cap);

/* Make sure dir holds a key and certificate: create dir (mode 0700, parents
 * too) and a new pair if it has none, under a lock so that servers starting
 * together make one. Sets cert and key to their paths. Returns 0, or -1
 * after printing why ("WHO: state directory DIR: ..."). */
int cli_identity_ensure(const char *who, const char *dir, char *cert, char *key, size_t cap);

/* Write a new pair for name (CN and DNS name), valid days, into dir
 * (created as above); an existing key is kept unless force. Returns 0, 1
 * (a key is there and not force: printed), or -1 after printing why. */
int cli_identity_write(const char *who, const char *dir, const char *name, unsigned days,
                       bool force);

#endif
