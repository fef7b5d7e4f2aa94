/*
 * cgireply.h: a CGI program's reply, read and checked (cgireply.c), for
 * the request targets (fuzz_request.c).
 */
#ifndef MSGSPOOL_CGIREPLY_H
#define MSGSPOOL_CGIREPLY_H

#include <stddef.h>
#include <jansson.h>

/* The whole of fd from its start, NUL-terminated; free it. */
char	*fuzz_read_all(int fd, size_t *len);

/*
 * Check the CGI reply r (len bytes): a "Status:" line, header lines, a
 * blank line and a body of Content-Length bytes, JSON, a problem naming
 * the same status when it is one, or (the receipts program's answer to
 * Twilio's incoming message) a 200 of an empty TwiML <Response/>;
 * fuzz_fail on the first thing wrong.  Its status, its parsed body in
 * *body (the caller's reference; NULL for TwiML).
 */
int	 fuzz_check_reply(const char *r, size_t len, json_t **body);

#endif
