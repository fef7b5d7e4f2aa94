/*
 * cgireply.c: a CGI program's reply, read whole from its file and
 * checked for the form every reply of cgi_run has (cgireply.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "cgireply.h"
#include "fuzzutil.h"

/* The whole of fd from its start, NUL-terminated. */
char *
fuzz_read_all(int fd, size_t *len)
{
	struct stat	 st;
	char		*buf;
	ssize_t		 n;
	size_t		 got = 0;

	if (fstat(fd, &st) == -1 || (buf = malloc((size_t)st.st_size +
	    1)) == NULL)
		fuzz_fail("cannot read the reply");
	while (got < (size_t)st.st_size) {
		n = pread(fd, buf + got, (size_t)st.st_size - got, (off_t)got);
		if (n <= 0)
			fuzz_fail("cannot read the reply");
		got += (size_t)n;
	}
	buf[got] = '\0';
	*len = got;
	return buf;
}

/* Check the CGI reply; its status, its parsed body in *body. */
int
fuzz_check_reply(const char *r, size_t len, json_t **body)
{
	const char	*p = r, *eol, *colon, *type = NULL;
	size_t		 clen = SIZE_MAX, n;
	json_error_t	 je;
	int		 status, used;

	if (sscanf(r, "Status: %3d%n", &status, &used) != 1 || used != 11 ||
	    status < 100 || status > 599)
		fuzz_fail("reply without a status line: %.80s", r);
	for (;;) {
		if ((eol = memmem(p, len - (size_t)(p - r), "\r\n", 2)) ==
		    NULL)
			fuzz_fail("reply headers without an end");
		if (eol == p)
			break;
		n = (size_t)(eol - p);
		if (memchr(p, '\n', n) || memchr(p, '\r', n) ||
		    (colon = memchr(p, ':', n)) == NULL || colon[1] != ' ')
			fuzz_fail("bad reply header line: %.*s", (int)n, p);
		if (strncmp(p, "Content-Type: ", 14) == 0)
			type = p + 14;
		if (strncmp(p, "Content-Length: ", 16) == 0)
			clen = strtoul(p + 16, NULL, 10);
		p = eol + 2;
	}
	p += 2;
	if (type == NULL || clen != len - (size_t)(p - r))
		fuzz_fail("reply: Content-Type or Content-Length wrong");
	/* Twilio's incoming message: an empty TwiML <Response/>. */
	if (strncmp(type, "text/xml", 8) == 0) {
		if (status != 200 || memmem(p, clen, "<Response/>", 11) == NULL)
			fuzz_fail("a TwiML reply that is no empty <Response/>");
		*body = NULL;
		return status;
	}
	if ((*body = json_loadb(p, clen, JSON_DECODE_ANY | JSON_ALLOW_NUL,
	    &je)) == NULL)
		fuzz_fail("reply body is not JSON: %s", je.text);
	if (strncmp(type, "application/problem+json", 24) == 0) {
		if (json_integer_value(json_object_get(*body, "status")) !=
		    status || strncmp(fuzz_str(*body, "type"),
		    "urn:msgspool:problem:", 21) != 0)
			fuzz_fail("problem with another status or no type");
	} else if (strncmp(type, "application/json", 16) != 0)
		fuzz_fail("reply of type %.40s", type);
	return status;
}
