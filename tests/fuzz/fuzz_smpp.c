/*
 * fuzz_smpp: what msgspoold reads from an SMSC (spooler/smpp/provider_smpp.c,
 * its source included, and the smpp_*.c beside it): a session with
 * messages submitted, then the input as the bytes that come back on its
 * socket, framed, unpacked by libsmpp34 and acted on (submit_sm_resp,
 * deliver_sm receipts stored in receipts/, SMS from phones kept in
 * inbox/ and their parts in inbox-parts/, enquire_link, unbind,
 * generic_nack, garbage).
 *
 * The first byte: bit 0 the session is binding (else bound), bits 1-2
 * how many messages (1 to 3) are in the window, bits 3-4 their text
 * (GSM, 3 GSM parts, UCS-2, 2 UCS-2 parts), bit 5 an attempt before
 * had the first part accepted (a resume: that part is not sent again).
 * The rest is the SMSC's.
 *
 * Properties: the window is never over its size; a message is handed
 * back only once nothing of it is outstanding, with an outcome; a sent
 * one has an id (maybe empty) for each part; a lost session leaves
 * nothing in flight; every byte written back is whole PDUs libsmpp34 can
 * read.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../spooler/smpp/provider_smpp.c"
#include "fuzzutil.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/*
 * provider.c's helpers for a job's message and the timeout key, which
 * the session uses (provider.c itself would pull in every provider and
 * curl).
 */
const json_t *
provider_message(const struct job *job)
{
	return json_object_get(job->doc, "message");
}

const char *
provider_msg_str(const struct job *job, const char *key)
{
	return json_string_value(json_object_get(provider_message(job), key));
}

int
provider_timeout(const struct config *cfg, const char *section, long *out,
    char *err, size_t errlen)
{
	if (config_seconds(cfg, section, "timeout", 30, out) == -1 ||
	    *out < 1) {
		snprintf(err, errlen, "[%s] timeout: not a duration", section);
		return -1;
	}
	return 0;
}

static char		 root[FUZZ_PATH_MAX];
static struct config	*cfg;

/* What an input may leave in the spool, emptied after it. */
static const char *const areas[] = { "receipts", "status", "inbox",
    "inbox-new", "inbox-parts", "index" };

/* The files of an area of the spool. */
static size_t
dir_count(const char *area)
{
	char		 path[FUZZ_PATH_MAX];
	DIR		*d;
	struct dirent	*de;
	size_t		 n = 0;

	fuzz_path(path, "%s/%s", root, area);
	if ((d = opendir(path)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static void
setup(void)
{
	static const char conf[] = "[sms]\nprovider = smpp\nhost = 127.0.0.1\n"
	    "system-id = fuzz\npassword = secret\nsource-addr = ACME\n"
	    "window = 4\n";
	struct spool	*sp;
	char		 err[256];

	fuzz_scratch(root, sizeof(root), "smpp");
	if ((sp = spool_open(root, 1, err, sizeof(err))) == NULL)
		fuzz_fail("spool: %s", err);
	spool_free(sp);
	if ((cfg = config_parse("fuzz.conf", conf, sizeof(conf) - 1, err,
	    sizeof(err))) == NULL)
		fuzz_fail("config: %s", err);
}

/* Read what the session wrote: whole PDUs, each one libsmpp34 reads. */
static void
check_written(int fd)
{
	uint8_t		 buf[65536];
	ssize_t		 n;
	size_t		 len = 0, off, l;
	uint32_t	 v;
	generic_nack_t	 h;

	while ((n = read(fd, buf + len, sizeof(buf) - len)) > 0) {
		len += (size_t)n;
		if (len == sizeof(buf))
			break;
	}
	for (off = 0; off + SMPP_HEADER <= len; off += l) {
		memcpy(&v, buf + off, 4);
		l = ntohl(v);
		if (l < SMPP_HEADER || off + l > len)
			fuzz_fail("a PDU of %zu bytes written, %zu left", l,
			    len - off);
		memcpy(&v, buf + off + 4, 4);
		/* The bodiless ones are read as a header. */
		if (ntohl(v) == ENQUIRE_LINK_RESP || ntohl(v) == UNBIND_RESP ||
		    ntohl(v) == GENERIC_NACK || ntohl(v) == ENQUIRE_LINK ||
		    ntohl(v) == UNBIND) {
			if (l != SMPP_HEADER)
				fuzz_fail("command %08x with a body",
				    (unsigned)ntohl(v));
			if (smpp34_unpack(ntohl(v), &h, buf + off, (int)l) != 0)
				fuzz_fail("libsmpp34 cannot read our %08x",
				    (unsigned)ntohl(v));
		}
	}
	if (off != len)
		fuzz_fail("%zu bytes of a PDU written", len - off);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const texts[] = { "hello", NULL, "\xd0\x96 ok",
	    NULL };
	char		 big[600], err[256];
	struct smpp	*st;
	struct job	*jobs[3], *job;
	const char	*text;
	size_t		 n, i, returned = 0, w;
	ssize_t		 k;
	int		 sv[2], kind, resumed;

	if (cfg == NULL)
		setup();
	if (size < 1)
		return 0;
	if ((st = smpp_init(cfg, "sms", root, err, sizeof(err))) == NULL)
		fuzz_fail("init: %s", err);
	if ((st->spool = spool_open(root, 0, err, sizeof(err))) == NULL)
		fuzz_fail("spool: %s", err);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == -1)
		fuzz_fail("socketpair");
	st->fd = sv[0];
	st->phase = data[0] & 1 ? SMPP_BINDING : SMPP_BOUND;
	st->bind_deadline = st->next_enquire = smpp_now_ms() + 60000;
	n = 1 + (size_t)((data[0] >> 1) & 3) % 3;
	kind = (data[0] >> 3) & 3;
	/* Only a text in parts resumes: 3 GSM or 2 UCS-2. */
	resumed = (data[0] & 0x20) && (kind == 1 || kind == 3);
	if ((text = texts[kind]) == NULL) {
		/* 3 parts of GSM, or 2 of UCS-2. */
		for (i = 0; i < 400 && kind == 1; i++)
			big[i] = (char)('a' + i % 26);
		for (i = 0; i < 80 && kind == 3; i++)
			memcpy(big + 2 * i, "\xd0\x96", 2);
		big[kind == 1 ? 400 : 160] = '\0';
		text = big;
	}
	for (i = 0; i < n; i++) {
		if ((jobs[i] = calloc(1, sizeof(*jobs[i]))) == NULL)
			fuzz_fail("out of memory");
		jobs[i]->lockfd = -1;
		jobs[i]->doc = json_pack("{s:s, s:{s:s, s:s}}", "id",
		    "01M8000000000000000000000A", "message", "to",
		    "+4915112345678", "body", text);
		/* As msg_finish records it: an id or null for each part. */
		if (resumed)
			json_object_set_new(jobs[i]->doc, "providerReply",
			    json_pack(kind == 1 ?
			    "{s:s, s:i, s:i, s:[s, n, n], s:i}" :
			    "{s:s, s:i, s:i, s:[s, n], s:i}",
			    "provider", "smpp", "parts", kind == 1 ? 3 : 2,
			    "ref", 7, "partIds", "EARLIER", "dataCoding",
			    kind == 1 ? 0 : 8));
		smpp_start(st, jobs[i]);
		if (!jobs[i]->pending)
			fuzz_fail("a message not taken: %s", jobs[i]->err);
	}
	smpp_submit_more(st);
	smpp_flush_out(st);
	check_written(sv[1]);
	if (st->inuse > st->window)
		fuzz_fail("%zu in a window of %zu", st->inuse, st->window);

	/* The SMSC's bytes, then the end of the connection. */
	for (w = 1; w < size; w += (size_t)k)
		if ((k = write(sv[1], data + w, size - w)) <= 0)
			break;
	shutdown(sv[1], SHUT_WR);
	smpp_read_in(st);
	if (st->fd != -1)
		smpp_read_in(st);
	smpp_flush_out(st);
	if (st->fd != -1)
		check_written(sv[1]);
	if (st->inuse > st->window)
		fuzz_fail("%zu in a window of %zu", st->inuse, st->window);
	if (st->fd == -1 && st->inuse != 0)
		fuzz_fail("session lost with %zu in flight", st->inuse);

	/* Everything handed back has an outcome that holds together. */
	st->done_at -= SMPP_HOLD;
	while ((job = smpp_reap(st)) != NULL) {
		returned++;
		if (job->status == MSG_OK) {
			json_t *ids = json_object_get(job->reply, "partIds");

			if ((json_int_t)json_array_size(ids) !=
			    json_integer_value(json_object_get(job->reply,
			    "parts")) || json_array_size(ids) == 0)
				fuzz_fail("sent with %zu ids",
				    json_array_size(ids));
			for (i = 0; i < json_array_size(ids); i++)
				if (!json_is_string(json_array_get(ids, i)))
					fuzz_fail("part %zu's id not a string",
					    i);
			if (resumed && strcmp(json_string_value(
			    json_array_get(ids, 0)), "EARLIER") != 0)
				fuzz_fail("a resumed message's first part "
				    "sent again");
		} else if (job->err[0] == '\0')
			fuzz_fail("failed without a reason");
		if (job->status != MSG_OK && job->status != MSG_TEMPFAIL &&
		    job->status != MSG_PERMFAIL)
			fuzz_fail("status %d", (int)job->status);
	}
	if (returned + st->queued > n)
		fuzz_fail("%zu back and %zu queued of %zu", returned,
		    st->queued, n);

	/* Not bound any more: no unbind to wait for. */
	st->phase = SMPP_DOWN;
	smpp_free(st);
	close(sv[1]);
	for (i = 0; i < n; i++) {
		json_decref(jobs[i]->doc);
		json_decref(jobs[i]->reply);
		free(jobs[i]);
	}
	/* The receipts stored, the session's status, the inbound messages
	 * and parts kept: every message kept noted for msgspoold. */
	if (dir_count("inbox") != dir_count("inbox-new"))
		fuzz_fail("%zu inbound messages kept, %zu noted",
		    dir_count("inbox"), dir_count("inbox-new"));
	for (i = 0; i < sizeof(areas) / sizeof(areas[0]); i++) {
		fuzz_path(big, "%s/%s", root, areas[i]);
		fuzz_empty_dir(big, NULL);
	}
	return 0;
}
