/*
 * provider_smtp.c: email over SMTP with libcurl.  The message is the
 * one message.h builds, byte for byte the .eml the file provider writes;
 * curl reads it from memory (CURLOPT_UPLOAD) after MAIL FROM and RCPT TO
 * the addr-specs of From and To.  STARTTLS or SMTPS, AUTH; the curl
 * multi handle reuses connections.
 *
 *	[email]
 *	provider = smtp
 *	url = smtp://mail.example.com:587
 *	username = msgspool
 *	password-file = /etc/msgspool/smtp.password
 *	starttls = yes		# yes, no, try (default)
 *	cafile = /etc/msgspool/relay-ca.pem	# optional: a private CA
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "providers/message.h"
#include "providers/provider.h"
#include "spool/msgdoc.h"

struct smtp_state {
	char		*url;
	char		*username;
	char		*password;
	char		*cafile;	/* a private CA, for an internal relay */
	char		*bounce;	/* bounce-address: VERP return path */
	long		 usessl;
	long		 timeout;
	struct spool	*spool;		/* for the attachments stored once */
	struct unsub	*unsub;		/* the clients' List-Unsubscribe */
};

static void
smtp_free(void *state)
{
	struct smtp_state	*st = state;

	if (st == NULL)
		return;
	free(st->url);
	free(st->username);
	free(st->password);
	free(st->cafile);
	free(st->bounce);
	spool_free(st->spool);
	unsub_free(st->unsub);
	free(st);
}

static void *
smtp_init(const struct config *cfg, const char *section,
    const char *spool_root, char *err, size_t errlen)
{
	struct smtp_state	*st;
	const char		*url, *user, *tls, *bounce, *at;
	char			*cafile;

	if ((url = config_get(cfg, section, "url")) == NULL ||
	    (strncmp(url, "smtp://", 7) != 0 &&
	    strncmp(url, "smtps://", 8) != 0)) {
		snprintf(err, errlen, "[%s] provider smtp needs url = "
		    "smtp://host:port or smtps://host:port", section);
		return NULL;
	}
	if ((st = calloc(1, sizeof(*st))) == NULL ||
	    (st->url = strdup(url)) == NULL) {
		snprintf(err, errlen, "out of memory");
		smtp_free(st);
		return NULL;
	}
	if ((st->spool = spool_open(spool_root, 0, err, errlen)) == NULL ||
	    (st->unsub = unsub_new(cfg, err, errlen)) == NULL) {
		smtp_free(st);
		return NULL;
	}
	message_init();
	tls = config_get(cfg, section, "starttls");
	if (tls == NULL || strcmp(tls, "try") == 0)
		st->usessl = CURLUSESSL_TRY;
	else if (strcmp(tls, "yes") == 0)
		st->usessl = CURLUSESSL_ALL;
	else if (strcmp(tls, "no") == 0)
		st->usessl = CURLUSESSL_NONE;
	else {
		snprintf(err, errlen, "[%s] starttls must be yes, no or try",
		    section);
		smtp_free(st);
		return NULL;
	}
	if ((user = config_get(cfg, section, "username")) != NULL) {
		if ((st->username = strdup(user)) == NULL ||
		    (st->password = config_secret(cfg, section, "password",
		    err, errlen)) == NULL) {
			smtp_free(st);
			return NULL;
		}
	}
	if ((cafile = config_path(cfg, section, "cafile", NULL)) != NULL)
		st->cafile = cafile;
	/* bounces@example.com: MAIL FROM bounces+ID@example.com (VERP). */
	if ((bounce = config_get(cfg, section, "bounce-address")) != NULL) {
		if ((at = strchr(bounce, '@')) == NULL || at == bounce ||
		    strchr(at + 1, '@') != NULL || at[1] == '\0' ||
		    strpbrk(bounce, "<>\r\n \t+") != NULL) {
			snprintf(err, errlen, "[%s] bounce-address must be a "
			    "plain address such as bounces@example.com, without "
			    "'+'", section);
			smtp_free(st);
			return NULL;
		}
		if ((st->bounce = strdup(bounce)) == NULL) {
			snprintf(err, errlen, "out of memory");
			smtp_free(st);
			return NULL;
		}
	}
	if (provider_timeout(cfg, section, &st->timeout, err, errlen) == -1) {
		smtp_free(st);
		return NULL;
	}
	return st;
}

/* curl reads the message from job->body, where it has got to. */
static size_t
message_read(char *buf, size_t size, size_t nitems, void *arg)
{
	struct job	*job = arg;
	size_t		 n = job->bodylen - job->bodyoff;

	if (n > size * nitems)
		n = size * nitems;
	memcpy(buf, job->body + job->bodyoff, n);
	job->bodyoff += n;
	return n;
}

/*
 * The command a reply answers, kept in the reply as "command": a 5xx to
 * RCPT TO says the address is gone (policy_unreachable), one to MAIL
 * FROM or DATA does not.  Only the verb: never what AUTH sends.
 */
static void
command_sent(struct job *job, const char *data, size_t len)
{
	static const char *const verbs[] = { "MAIL FROM", "RCPT TO", "DATA",
	    "EHLO", "HELO", "STARTTLS", "AUTH", "RSET" };
	size_t	i, n;

	for (i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
		n = strlen(verbs[i]);
		if (len >= n && strncasecmp(data, verbs[i], n) == 0) {
			json_object_set_new(job->reply, "command",
			    json_string(verbs[i]));
			return;
		}
	}
}

/*
 * Keep the server's last reply line ("550 5.1.1 no such user"), so that
 * a failure records the server's own reason, and the command it
 * answers.
 */
static int
server_reply(CURL *e, curl_infotype type, char *data, size_t len, void *arg)
{
	struct job	*job = arg;

	(void)e;
	if (type == CURLINFO_HEADER_OUT)
		command_sent(job, data, len);
	/* Not the 221 of QUIT, which follows a failure too. */
	if (type != CURLINFO_HEADER_IN || (len >= 4 &&
	    strncmp(data, "221 ", 4) == 0))
		return 0;
	while (len > 0 && (data[len - 1] == '\n' || data[len - 1] == '\r'))
		len--;
	buf_free(&job->resp);
	buf_add(&job->resp, data, len > 400 ? 400 : len);
	return 0;
}

static void
smtp_start(void *state, struct job *job)
{
	struct smtp_state	*st = state;
	struct message		*m;
	char			 addr[512], rcpt[512];

	/* The bytes the file provider would write (message.h). */
	if ((m = message_build(st->spool, job->name, msgdoc_id(job->doc),
	    provider_message(job), st->unsub, msgdoc_client(job->doc),
	    &job->status, job->err, sizeof(job->err))) == NULL)
		return;
	/* The return path: VERP names the message, so its bounce finds it. */
	if (st->bounce != NULL) {
		const char *at = strchr(st->bounce, '@');

		if ((size_t)snprintf(addr, sizeof(addr), "<%.*s+%s%s>",
		    (int)(at - st->bounce), st->bounce, msgdoc_id(job->doc),
		    at) >= sizeof(addr))
			addr[0] = '\0';
	} else if ((size_t)snprintf(addr, sizeof(addr), "<%s>", m->sender) >=
	    sizeof(addr))
		addr[0] = '\0';
	if (addr[0] == '\0' || (size_t)snprintf(rcpt, sizeof(rcpt), "<%s>",
	    m->recipient) >= sizeof(rcpt)) {
		job->status = MSG_PERMFAIL;
		snprintf(job->err, sizeof(job->err), "from or to is too long");
		message_free(m);
		return;
	}
	job->status = MSG_TEMPFAIL;
	if ((job->easy = provider_easy(job, st->url, st->timeout)) == NULL) {
		snprintf(job->err, sizeof(job->err), "out of memory");
		message_free(m);
		return;
	}
	curl_easy_setopt(job->easy, CURLOPT_MAIL_FROM, addr);
	job->rcpts = curl_slist_append(NULL, rcpt);
	curl_easy_setopt(job->easy, CURLOPT_MAIL_RCPT, job->rcpts);
	curl_easy_setopt(job->easy, CURLOPT_USE_SSL, st->usessl);
	curl_easy_setopt(job->easy, CURLOPT_DEBUGFUNCTION, server_reply);
	curl_easy_setopt(job->easy, CURLOPT_DEBUGDATA, job);
	curl_easy_setopt(job->easy, CURLOPT_VERBOSE, 1L);
	if (st->cafile != NULL)
		curl_easy_setopt(job->easy, CURLOPT_CAINFO, st->cafile);
	if (st->username != NULL) {
		curl_easy_setopt(job->easy, CURLOPT_USERNAME, st->username);
		curl_easy_setopt(job->easy, CURLOPT_PASSWORD, st->password);
	}
	/* The message is the daemon's now: it frees job->body. */
	job->body = m->data;
	job->bodylen = m->len;
	job->bodyoff = 0;
	m->data = NULL;
	curl_easy_setopt(job->easy, CURLOPT_UPLOAD, 1L);
	curl_easy_setopt(job->easy, CURLOPT_READFUNCTION, message_read);
	curl_easy_setopt(job->easy, CURLOPT_READDATA, job);
	curl_easy_setopt(job->easy, CURLOPT_INFILESIZE_LARGE,
	    (curl_off_t)job->bodylen);
	job->reply = json_pack("{s:s, s:s}", "provider", "smtp", "messageId",
	    m->id);
	message_free(m);
}

static void
smtp_finish(void *state, struct job *job, CURLcode rc, long code)
{
	json_t	*cmd;

	(void)state;
	if (rc == CURLE_OK) {
		json_object_del(job->reply, "command");
		json_object_set_new(job->reply, "code", json_integer(code));
		if (job->resp.len > 0)
			json_object_set_new(job->reply, "reply",
			    json_string(job->resp.p));
		job->status = MSG_OK;
		return;
	}
	cmd = json_incref(json_object_get(job->reply, "command"));
	json_decref(job->reply);
	/* The server's code is the status object's error code. */
	job->reply = code > 0 ? json_pack("{s:s, s:i, s:s?, s:o*}",
	    "provider", "smtp", "code", (int)code, "reply", job->resp.len > 0 ?
	    job->resp.p : NULL, "command", cmd) : NULL;
	if (code <= 0)
		json_decref(cmd);
	/* The server's word decides: 4xx later, 5xx never. */
	if (code >= 500 && code < 600)
		job->status = MSG_PERMFAIL;
	else
		job->status = MSG_TEMPFAIL;
	if (code > 0 && job->resp.len > 0)
		snprintf(job->err, sizeof(job->err), "SMTP %ld: %s", code,
		    job->resp.p);
	else
		snprintf(job->err, sizeof(job->err), "SMTP: %s",
		    job->curlerr[0] ? job->curlerr : curl_easy_strerror(rc));
}

const struct provider provider_smtp = {
	.name = "smtp",
	.channels = "email",
	.init = smtp_init,
	.start = smtp_start,
	.finish = smtp_finish,
	.free_state = smtp_free,
};
