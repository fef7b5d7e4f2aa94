/*
 * keyword.h: the keywords of inbound messages (msgspool.conf(5), Client
 * sections: stop-keywords, start-keywords, help-keywords, stop-channels,
 * stop-reply, start-reply, help-reply; msgspool-spool(5), Keywords).
 * An inbound text is a keyword when it is, trimmed, case-folded and
 * with each inner run of blanks as one space, one of its client's; a
 * keyword inside a longer text is none.  Matching is a pure function of
 * the text and the lists; msgspoold acts on what it says
 * (msgspoold(8), Inbound messages).
 */
#ifndef KEYWORD_H
#define KEYWORD_H

#include <stddef.h>
#include <time.h>
#include <jansson.h>

#include "base/config.h"

enum keyword {
	KEYWORD_STOP,
	KEYWORD_START,
	KEYWORD_HELP,
	KEYWORD__MAX
};

/* The lists when a client's section sets none (msgspool.conf(5)). */
#define KEYWORD_STOP_DEFAULT	"STOP, STOPALL, STOP ALL, UNSUBSCRIBE, " \
				"CANCEL, END, QUIT, REVOKE, OPTOUT, OPT OUT"
#define KEYWORD_START_DEFAULT	"START, UNSTOP, YES, SUBSCRIBE"
#define KEYWORD_HELP_DEFAULT	"HELP, INFO"
/* A keyword, folded, at most (bytes); a longer text is no keyword. */
#define KEYWORD_MAX		64
/* A reply, at most (characters): one SMS's text (sms.h). */
#define KEYWORD_REPLY_MAX	1600

/*
 * A client's keywords: each list comma-separated, as the config gives
 * it (borrowed from the config, or a default above); the text of each
 * kind's reply, or NULL for none; whether an SMS stop suppresses voice
 * too (stop-channels).
 */
struct keywords {
	const char	*list[KEYWORD__MAX];
	const char	*reply[KEYWORD__MAX];
	int		 stop_voice;
};

/* "stop", "start", "help"; "?" for another value. */
const char	*keyword_name(enum keyword);

/*
 * Fold s[0..len) as keywords compare: blanks (ASCII and Unicode spaces)
 * at either end dropped, each inner run of them one space, letters in
 * lower case (ASCII, Latin-1, Latin Extended-A, Greek, Cyrillic); into
 * out, NUL-terminated.  Its length, or -1 when s is not UTF-8, holds a
 * NUL or a control character, or its fold does not fit in outlen.
 */
int		 keyword_fold(const char *s, size_t len, char *out,
		    size_t outlen);

/*
 * Which of kw's keywords text is: KEYWORD_STOP, KEYWORD_START or
 * KEYWORD_HELP, or -1 when none (or text is NULL).  Pure: no config, no
 * spool, no allocation.
 */
int		 keyword_match(const struct keywords *kw, const char *text);

/*
 * The keywords of client (its [client.ID] section, the defaults where it
 * sets none) into kw, borrowing from cfg.  0, or -1 with the reason in
 * err naming the section and key: a list that is empty (stop-keywords),
 * has an empty entry or one over KEYWORD_MAX bytes, or a keyword of
 * another list too; a reply that is empty, not UTF-8 or longer than
 * KEYWORD_REPLY_MAX characters; stop-channels other than sms and voice,
 * or without sms.
 */
int		 keyword_config(const struct config *, const char *client,
		    struct keywords *kw, char *err, size_t errlen);

/*
 * keyword_config for a config section: 0 for a section that is no
 * client's, else its answer.
 */
int		 keyword_check_section(const struct config *,
		    const char *section, char *err, size_t errlen);

/*
 * The id of the reply to inbound message inbound_id, into out
 * (SPOOL_ID_LEN + 1 bytes): the inbound id's time, and 80 bits of the
 * SHA-256 of "msgspool-keyword-reply:" and that id.  The same inbound
 * message always has the same reply id, so msgspoold, acting on it
 * again after a crash, finds the reply it queued (msgspool-spool(5),
 * Keywords).  0, or -1 when inbound_id is not an id.
 */
int		 keyword_reply_id(const char *inbound_id, char *out);

/*
 * The reply to inbound, an SMS of its client (a spool document, queued
 * at now): to its sender, from the number it was sent to, text the
 * reply's; its id keyword_reply_id's; marked as the reply to that
 * message for keyword k (msgdoc_set_reply), so that a stop confirmation
 * goes although its recipient is suppressed.  to is the sender as the
 * sms list writes it (suppress_normalize).  A new reference, or NULL
 * (not an inbound document, out of memory).
 */
json_t		*keyword_reply(const json_t *inbound, const char *to,
		    enum keyword k, const char *text, time_t now);

#endif
