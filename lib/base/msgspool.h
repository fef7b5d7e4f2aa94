/*
 * msgspool.h: definitions shared by every module of libmsgspool.
 */
#ifndef MSGSPOOL_H
#define MSGSPOOL_H

/*
 * The outcome of anything that can fail, from a provider up to a CGI
 * program.  TEMPFAIL is worth retrying (a 503 to a client, deferred/ in
 * the spool); PERMFAIL is not (a 4xx to a client, failed/ in the spool).
 */
enum msg_status {
	MSG_OK = 0,
	MSG_TEMPFAIL,
	MSG_PERMFAIL
};

#ifndef MSGSPOOL_SYSCONFDIR
#define MSGSPOOL_SYSCONFDIR "/usr/local/etc"
#endif
#define MSGSPOOL_DEFAULT_CONFIG MSGSPOOL_SYSCONFDIR "/msgspool/msgspool.conf"

#endif
