/*
 * message.h: the one builder of the email msgspool sends, on GMime.  The
 * file provider writes its bytes to outbox/ID.eml and the smtp provider
 * sends the same bytes, so what the outbox shows is what a relay gets.
 * Only msgspoold links it (and GMime): the CGI programs validate an
 * email with lib/base/mime.h and never build one.
 *
 * The message of a spool document ({"from","to","subject","html","text",
 * "attachments":[{"name","contentType","content"|"blob"}]}, see
 * msgspool-spool(5)) becomes, with CRLF line ends and 7-bit throughout:
 *
 *	Date: the id's time (when it was queued), RFC 5322, +0000
 *	From, To: the address as written; a display name RFC 2047-encoded
 *	    (UTF-8) when not ASCII, quoted when RFC 5322 needs it
 *	Subject: RFC 2047-encoded (UTF-8) when not ASCII
 *	Message-ID: <ID@the domain of From>
 *	MIME-Version: 1.0
 *	List-Unsubscribe: <URL> and List-Unsubscribe-Post:
 *	    List-Unsubscribe=One-Click (RFC 2369, RFC 8058), when the
 *	    message's client has list-unsubscribe = yes: URL is unsub_url's
 *	    for the client and the addr-spec of To (content/unsub.h)
 *	multipart/mixed (boundary "=_mixed_ID") of a multipart/alternative
 *	    ("=_alternative_ID") of text/plain then text/html, UTF-8,
 *	    quoted-printable; then each attachment, base64, with its
 *	    contentType, a name= parameter of RFC 2047 words and an RFC 2231
 *	    filename*= (with continuations) in Content-Disposition.
 *
 * Everything in it is a function of the document, so building it twice
 * gives the same bytes.  GMime cuts RFC 2047 words every 39 characters,
 * not bytes, so a word of CJK or emoji text can be longer than the 75
 * characters RFC 2047 asks for (mail readers take it; every line stays
 * far below the 998 of RFC 5322).
 */
#ifndef MESSAGE_H
#define MESSAGE_H

#include <stddef.h>
#include <jansson.h>

#include "base/msgspool.h"
#include "content/unsub.h"
#include "spool/spool.h"

struct message {
	char	*data;		/* len bytes, then a NUL; free() it if taken */
	size_t	 len;
	char	*sender;	/* the addr-spec of From, for MAIL FROM */
	char	*recipient;	/* the addr-spec of To, for RCPT TO */
	char	*id;		/* the Message-ID, "<ID@domain>" */
};

/*
 * Set GMime up, once a process whatever the calls (it is shut down at
 * exit).  Every provider that builds messages calls it in its init.
 */
void		 message_init(void);

/*
 * Build the email message msg of the spool document id, whose spool
 * file is called name: its attachments stored once (blob.h) are read
 * from spool's blobs/ (spool may be NULL when none is).  When unsub (may
 * be NULL) gives client (the document's) a link, the message carries
 * it as List-Unsubscribe.  A new message (free with message_free), or
 * NULL with *st (MSG_PERMFAIL: the message can never be built, as an
 * address that is not one or a blob that is missing; MSG_TEMPFAIL: a
 * blob cannot be read now, or out of memory) and the reason in err.
 */
struct message	*message_build(struct spool *spool, const char *name,
		    const char *id, const json_t *msg,
		    const struct unsub *unsub, const char *client,
		    enum msg_status *st, char *err, size_t errlen);

/* Free m and all it holds; NULL is fine. */
void		 message_free(struct message *m);

#endif
