/*
 * provider_smtp.c: email over SMTP with libcurl.  The message is built
 * with curl_mime: multipart/mixed holding a multipart/alternative of the
 * text and HTML parts, then each attachment with its detected type and
 * name (the header values of mime.h, so the .eml of the file provider
 * says the same); an attachment stored once (blob.h) is streamed from
 * its file.  Message-ID and Date headers; STARTTLS or SMTPS, AUTH; the
 * curl multi handle reuses connections.
 *
 *	[email]
 *	provider = smtp
 *	url = smtp://mail.example.com:587
 *	username = msgspool
 *	password-file = /etc/msgspool/smtp.password
 *	starttls = yes		# yes, no, try (default)
 *	cafile = /etc/msgspool/relay-ca.pem	# optional: a private CA
 */
#include <ctype.h>
#include <errno.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "blob.h"
#include "mime.h"
#include "provider.h"

struct smtp_state {
	char		*url;
	char		*username;
	char		*password;
	char		*cafile;	/* a private CA, for an internal relay */
	long		 usessl;
	long		 timeout;
	struct spool	*spool;		/* for the attachments stored once */
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
	spool_free(st->spool);
	free(st);
}

static void *
smtp_init(const struct config *cfg, const char *section,
    const char *spool_root, char *err, size_t errlen)
{
	struct smtp_state	*st;
	const char		*url, *user, *tls;
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
	if ((st->spool = spool_open(spool_root, 0, err, errlen)) == NULL) {
		smtp_free(st);
		return NULL;
	}
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
	if (provider_timeout(cfg, section, &st->timeout, err, errlen) == -1) {
		smtp_free(st);
		return NULL;
	}
	return st;
}

/* The addr-spec of an address, "<a@b>", into out.  0, or -1. */
static int
bare_address(const char *addr, char *out, size_t len)
{
	struct mime_address	a;

	if (mime_address_parse(addr, strlen(addr), &a) != NULL ||
	    snprintf(out, len, "<%.*s>", (int)a.addrlen, a.addr) >= (int)len)
		return -1;
	return 0;
}

/* "Name: value", the value encoded as mime.h says.  0, or -1. */
static int
header(struct job *job, const char *name, const char *value)
{
	struct buf	 b = { NULL, 0, 0, 0 };
	char		*line;
	int		 rc;

	buf_puts(&b, name);
	buf_puts(&b, ": ");
	rc = mime_header_value(&b, value, strcmp(name, "From") == 0 ||
	    strcmp(name, "To") == 0);
	if ((line = buf_take(&b, NULL)) == NULL || rc == -1) {
		free(line);
		return -1;
	}
	job->headers = curl_slist_append(job->headers, line);
	free(line);
	return 0;
}

/* Add a text part with its charset, quoted-printable. */
static int
text_part(curl_mime *alt, const char *text, const char *type)
{
	curl_mimepart	*part;

	if ((part = curl_mime_addpart(alt)) == NULL)
		return -1;
	return curl_mime_data(part, text, CURL_ZERO_TERMINATED) ||
	    curl_mime_type(part, type) ||
	    curl_mime_encoder(part, "quoted-printable") ? -1 : 0;
}

/* An attachment stored once, streamed from its file as curl reads. */
struct blob_reader {
	int		fd;
	curl_off_t	off;
};

static size_t
blob_read(char *buf, size_t size, size_t nitems, void *arg)
{
	struct blob_reader	*r = arg;
	ssize_t			 n;

	while ((n = pread(r->fd, buf, size * nitems, (off_t)r->off)) == -1 &&
	    errno == EINTR)
		;
	if (n == -1)
		return CURL_READFUNC_ABORT;
	r->off += n;
	return (size_t)n;
}

static int
blob_seek(void *arg, curl_off_t offset, int origin)
{
	struct blob_reader	*r = arg;

	if (origin != SEEK_SET || offset < 0)
		return CURL_SEEKFUNC_CANTSEEK;
	r->off = offset;
	return CURL_SEEKFUNC_OK;
}

static void
blob_close(void *arg)
{
	struct blob_reader	*r = arg;

	close(r->fd);
	free(r);
}

/*
 * The data of attachment a (the i-th) into part: its inline content
 * decoded, or its blob streamed.  0, or -1 with job->status and err.
 */
static int
attachment_data(struct smtp_state *st, struct job *job, const json_t *a,
    size_t i, curl_mimepart *part)
{
	struct blob_reader	*r;
	const json_t		*c = json_object_get(a, "content"), *sz;
	unsigned char		*data;
	size_t			 len, index;
	int			 fd, rc, e;

	if ((rc = blob_index(a, &index)) == 0) {
		if (!json_is_string(c) || mime_base64_decode(
		    json_string_value(c), json_string_length(c), 0, &data,
		    &len) != 0) {
			snprintf(job->err, sizeof(job->err), "attachment %zu "
			    "has no content", i);
			return -1;
		}
		rc = curl_mime_data(part, (const char *)data, len);
		free(data);
		return rc == CURLE_OK ? 0 : -1;
	}
	if (rc == -1) {
		snprintf(job->err, sizeof(job->err), "attachment %zu: "
		    "\"blob\" is not an index", i);
		return -1;
	}
	/* Missing or not a regular file is for good; the rest may pass. */
	if ((fd = blob_open(st->spool, job->name, index, &len)) == -1) {
		e = errno;
		if (e != ENOENT && e != EINVAL && e != ENOTDIR)
			job->status = MSG_TEMPFAIL;
		snprintf(job->err, sizeof(job->err), "attachment %zu: "
		    "blobs/%.*s.%zu: %s", i, SPOOL_ID_LEN, job->name, index,
		    e == EINVAL ? "not a regular file" : strerror(e));
		return -1;
	}
	sz = json_object_get(a, "size");
	if (json_is_integer(sz) && json_integer_value(sz) != (json_int_t)len) {
		close(fd);
		snprintf(job->err, sizeof(job->err), "attachment %zu: "
		    "blobs/%.*s.%zu: %zu bytes, not the %lld of the message",
		    i, SPOOL_ID_LEN, job->name, index, len,
		    (long long)json_integer_value(sz));
		return -1;
	}
	if ((r = malloc(sizeof(*r))) == NULL) {
		close(fd);
		job->status = MSG_TEMPFAIL;
		snprintf(job->err, sizeof(job->err), "out of memory");
		return -1;
	}
	r->fd = fd;
	r->off = 0;
	if (curl_mime_data_cb(part, (curl_off_t)len, blob_read, blob_seek,
	    blob_close, r) != CURLE_OK) {
		blob_close(r);
		return -1;
	}
	return 0;
}

/*
 * The body: the text alternatives, then the attachments.  0, or -1 with
 * job->status (PERMFAIL unless set to TEMPFAIL) and a reason in err.
 */
static int
build_mime(struct smtp_state *st, struct job *job)
{
	const json_t		*atts, *a;
	curl_mime		*alt;
	curl_mimepart		*part;
	struct curl_slist	*hdr;
	struct buf		 ct = { NULL, 0, 0, 0 };
	struct buf		 cd = { NULL, 0, 0, 0 };
	const char		*html, *text, *name, *type;
	size_t			 i;
	int			 rc;

	html = provider_msg_str(job, "html");
	text = provider_msg_str(job, "text");
	if ((job->mime = curl_mime_init(job->easy)) == NULL ||
	    (alt = curl_mime_init(job->easy)) == NULL)
		return -1;
	if ((text != NULL && text_part(alt, text,
	    "text/plain; charset=utf-8") == -1) ||
	    (html != NULL && text_part(alt, html,
	    "text/html; charset=utf-8") == -1)) {
		curl_mime_free(alt);
		return -1;
	}
	if ((part = curl_mime_addpart(job->mime)) == NULL ||
	    curl_mime_subparts(part, alt) != CURLE_OK) {
		curl_mime_free(alt);
		return -1;
	}
	curl_mime_type(part, "multipart/alternative");
	hdr = curl_slist_append(NULL, "Content-Disposition: inline");
	curl_mime_headers(part, hdr, 1);
	atts = json_object_get(provider_message(job), "attachments");
	json_array_foreach(atts, i, a) {
		name = json_string_value(json_object_get(a, "name"));
		type = json_string_value(json_object_get(a, "contentType"));
		if (name == NULL) {
			snprintf(job->err, sizeof(job->err), "attachment %zu "
			    "has no name", i);
			return -1;
		}
		if ((part = curl_mime_addpart(job->mime)) == NULL ||
		    attachment_data(st, job, a, i, part) == -1)
			return -1;
		/* Our own Content-Disposition: curl then adds none. */
		mime_content_type(&ct, type ? type : "application/octet-stream",
		    name);
		buf_puts(&cd, "Content-Disposition: ");
		mime_content_disposition(&cd, name);
		rc = ct.failed || cd.failed ||
		    curl_mime_type(part, ct.p) != CURLE_OK ||
		    (hdr = curl_slist_append(NULL, cd.p)) == NULL ||
		    curl_mime_headers(part, hdr, 1) != CURLE_OK ||
		    curl_mime_encoder(part, "base64") != CURLE_OK;
		buf_free(&ct);
		buf_free(&cd);
		if (rc)
			return -1;
	}
	return 0;
}

/*
 * Keep the server's last reply line ("550 5.1.1 no such user"), so that
 * a failure records the server's own reason.
 */
static int
server_reply(CURL *e, curl_infotype type, char *data, size_t len, void *arg)
{
	struct job	*job = arg;

	(void)e;
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
	const char		*from, *to, *subject, *id, *at;
	char			 addr[512], rcpt[512], line[600], date[64];
	time_t			 now = time(NULL);

	job->status = MSG_TEMPFAIL;
	from = provider_msg_str(job, "from");
	to = provider_msg_str(job, "to");
	subject = provider_msg_str(job, "subject");
	id = json_string_value(json_object_get(job->doc, "id"));
	if (from == NULL || to == NULL || id == NULL) {
		job->status = MSG_PERMFAIL;
		snprintf(job->err, sizeof(job->err), "no from or to");
		return;
	}
	/* Checked when queued; a document from elsewhere is checked here. */
	if (bare_address(from, addr, sizeof(addr)) == -1 ||
	    bare_address(to, rcpt, sizeof(rcpt)) == -1) {
		job->status = MSG_PERMFAIL;
		snprintf(job->err, sizeof(job->err), "from or to is not one "
		    "address");
		return;
	}
	if ((job->easy = provider_easy(job, st->url, st->timeout)) == NULL) {
		snprintf(job->err, sizeof(job->err), "out of memory");
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
	mime_date(now, date, sizeof(date));
	snprintf(line, sizeof(line), "Date: %s", date);
	job->headers = curl_slist_append(job->headers, line);
	if (header(job, "From", from) == -1 || header(job, "To", to) == -1 ||
	    header(job, "Subject", subject ? subject : "") == -1) {
		snprintf(job->err, sizeof(job->err), "cannot encode the "
		    "headers");
		job->status = MSG_PERMFAIL;
		curl_easy_cleanup(job->easy);
		job->easy = NULL;
		return;
	}
	at = strrchr(addr, '@');
	snprintf(line, sizeof(line), "Message-ID: <%s@%.*s>", id,
	    at ? (int)strlen(at + 1) - 1 : 9, at ? at + 1 : "localhost");
	job->headers = curl_slist_append(job->headers, line);
	job->headers = curl_slist_append(job->headers, "MIME-Version: 1.0");
	curl_easy_setopt(job->easy, CURLOPT_HTTPHEADER, job->headers);
	/* Unless an attachment cannot be read now, a failure is for good. */
	job->status = MSG_PERMFAIL;
	if (build_mime(st, job) == -1) {
		if (job->err[0] == '\0')
			snprintf(job->err, sizeof(job->err), "cannot build "
			    "the MIME message");
		curl_easy_cleanup(job->easy);
		job->easy = NULL;
		return;
	}
	job->status = MSG_TEMPFAIL;
	curl_easy_setopt(job->easy, CURLOPT_MIMEPOST, job->mime);
	job->reply = json_pack("{s:s, s:s+}", "provider", "smtp",
	    "messageId", strchr(line, '<'), "");
}

static void
smtp_finish(void *state, struct job *job, CURLcode rc, long code)
{
	(void)state;
	if (rc == CURLE_OK) {
		json_object_set_new(job->reply, "code", json_integer(code));
		if (job->resp.len > 0)
			json_object_set_new(job->reply, "reply",
			    json_string(job->resp.p));
		job->status = MSG_OK;
		return;
	}
	json_decref(job->reply);
	job->reply = NULL;
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
