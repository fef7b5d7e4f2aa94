/*
 * rfc3339.h: times as msgspool writes them (UTC, "2026-11-23T10:00:00Z")
 * and reads them (any RFC 3339 offset, fractions allowed).
 */
#ifndef RFC3339_H
#define RFC3339_H

#include <stddef.h>
#include <time.h>

#define RFC3339_LEN	21	/* "2026-11-23T10:00:00Z" and its NUL */

/* Format t as RFC 3339 UTC into buf (RFC3339_LEN bytes or more). */
void		 rfc3339_format(time_t t, char *buf, size_t len);

/* Parse an RFC 3339 time.  0 with *out set, or -1. */
int		 rfc3339_parse(const char *s, time_t *out);

#endif
