/*
 * noop-fcgi.c: the cheapest FastCGI responder there is, the baseline of
 * make bench for msgspool-fcgi: libfcgi's accept loop answering "ok" to
 * every request, its body left to libfcgi.  It forks as many processes as
 * msgspool-fcgi would (MSGSPOOL_FCGI_WORKERS, default 8) on the socket it
 * is given (descriptor 0), so that both run alike under lighttpd.
 */
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcgiapp.h>

static int
serve(void)
{
	static const char resp[] = "Status: 200 OK\r\n"
	    "Content-Type: text/plain\r\nContent-Length: 3\r\n\r\nok\n";
	FCGX_Request	req;

	if (FCGX_InitRequest(&req, 0, 0) != 0)
		return 1;
	while (FCGX_Accept_r(&req) >= 0) {
		FCGX_PutStr(resp, sizeof(resp) - 1, req.out);
		FCGX_Finish_r(&req);
	}
	return 0;
}

int
main(void)
{
	const char	*s = getenv("MSGSPOOL_FCGI_WORKERS");
	int		 i, n = s != NULL ? atoi(s) : 8;

	if (FCGX_Init() != 0)
		return 1;
	signal(SIGPIPE, SIG_IGN);
	if (n < 1)
		n = 1;
	for (i = 0; i < n; i++)
		if (fork() == 0) {
			prctl(PR_SET_PDEATHSIG, SIGTERM);
			_exit(serve());
		}
	while (wait(NULL) > 0)
		continue;
	return 0;
}
