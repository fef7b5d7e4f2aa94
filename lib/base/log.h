/*
 * log.h: one line per event on stderr, prefixed with a UTC time, the
 * program name and its pid, so that a web server's error log or
 * journald keeps the events of msgspool apart.
 */
#ifndef LOG_H
#define LOG_H

enum log_level {
	LOG_LEVEL_INFO,
	LOG_LEVEL_WARN,
	LOG_LEVEL_ERR
};

/* Write one line; newlines inside the message are replaced by spaces. */
void	log_msg(enum log_level, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));

#define log_info(...)	log_msg(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_warn(...)	log_msg(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_err(...)	log_msg(LOG_LEVEL_ERR, __VA_ARGS__)

#endif
