/*
 * noop.c: the cheapest CGI program there is, the baseline of make bench:
 * one fork and exec per request and nothing else.
 */
#include <unistd.h>

int
main(void)
{
	static const char resp[] = "Status: 200 OK\r\n"
	    "Content-Type: text/plain\r\nContent-Length: 3\r\n\r\nok\n";

	return write(STDOUT_FILENO, resp, sizeof(resp) - 1) ==
	    (ssize_t)sizeof(resp) - 1 ? 0 : 1;
}
