/*
 * daemon_wait.c: msgspoold waits for work (msgspoold(8)): a transfer, a
 * file in new/ or deferred/ (inotify), a session's socket or timer, a
 * signal, the next chore, or the outcomes waiting to be recorded.
 */
#include <stdio.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "daemon/claimkeep.h"
#include "daemon/daemon.h"
#include "daemon/recorder.h"
#include "daemon/webhook.h"
#include "providers/provider.h"
#include "spool/spool.h"

/*
 * Read what inotify saw: a file in new/ means a scan; one in deferred/ is
 * stat'ed, and the next promotion comes no later than it is due.
 */
static void
drain_inotify(struct daemon *d)
{
	const struct inotify_event	*ev;
	char				 buf[8192], path[4096];
	struct stat			 st;
	ssize_t				 n, i;

	if (d->ino == -1)
		return;
	while ((n = read(d->ino, buf, sizeof(buf))) > 0) {
		for (i = 0; i < n; i += (ssize_t)sizeof(*ev) + ev->len) {
			ev = (const struct inotify_event *)(buf + i);
			if (ev->mask & IN_Q_OVERFLOW) {
				d->new_dirty = 1;
				d->next_promote = 0;
			} else if (ev->wd == d->wd_new)
				d->new_dirty = 1;
			else if (ev->wd == d->wd_deferred && ev->len > 0 &&
			    spool_path(d->spool, SPOOL_DEFERRED, ev->name, path,
			    sizeof(path)) == 0 && stat(path, &st) == 0 &&
			    st.st_mtime < d->next_promote)
				d->next_promote = st.st_mtime;
		}
	}
}

/* Wait for a transfer, a file in new/, a signal, or the next chore. */
void
wait_for_work(struct daemon *d, time_t now, int reloading)
{
	struct curl_waitfd	 w[3 + WAIT_SESSIONS_MAX];
	const struct provider	*p;
	time_t			 until;
	size_t			 i;
	int			 ms, left, n = 0;

	until = d->next_promote < d->next_recover ? d->next_promote :
	    d->next_recover;
	if (d->next_rescan < until)
		until = d->next_rescan;
	ms = until > now ? (int)(until - now) * 1000 : 0;
	if (ms > 1000)
		ms = 1000;	/* signals are seen within a second */
	if ((d->new_dirty && d->inflight + d->ndone + d->recording <
	    d->concurrency && !reloading) || webhooks_dirty(d->wh))
		ms = 0;
	/* Outcomes waiting to be recorded: no later than they are due. */
	if (d->ndone > 0 && (left = flush_wait_ms(d)) < ms)
		ms = left;
	/* Files arriving only matter when there is room for them. */
	if (d->ino != -1 && d->inflight < d->concurrency) {
		w[n].fd = d->ino;
		w[n].events = CURL_WAIT_POLLIN;
		w[n++].revents = 0;
	}
	/* Claims the keeper's thread made ready. */
	if (d->keeper != NULL && d->inflight < d->concurrency) {
		w[n].fd = keeper_fd(d->keeper);
		w[n].events = CURL_WAIT_POLLIN;
		w[n++].revents = 0;
	}
	/* Outcomes the recorder's thread wrote: their slots free again. */
	if (d->rec != NULL && d->recording > 0) {
		w[n].fd = recorder_fd(d->rec);
		w[n].events = CURL_WAIT_POLLIN;
		w[n++].revents = 0;
	}
	/* The sessions' sockets, and their timers. */
	for (i = 0; i < d->nroutes; i++)
		if ((p = d->routes[i]->provider)->fds != NULL)
			n += (int)p->fds(d->routes[i]->state, w + n,
			    WAIT_SESSIONS_MAX + 3 - (size_t)n, &ms);
	curl_multi_poll(d->multi, n ? w : NULL, (unsigned)n, ms, NULL);
	drain_inotify(d);
}
