/*
 * plan_errors.h - error codes of libplan.
 *
 * Stability: the numeric values below are part of the library's interface
 * and of bcgtool's machine-readable output. A value, once released, never
 * changes meaning; new codes take unused numbers; removed codes leave a gap.
 */
#ifndef PLAN_ERRORS_H
#define PLAN_ERRORS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum plan_error {
	PLAN_OK              = 0,
	PLAN_ERR_GENERIC     = 1,  /* an error with no better code */

	/* Reading a plan file. */
	PLAN_ERR_BAD_MAGIC   = 10, /* not a plan file */
	PLAN_ERR_VERSION     = 11, /* format major version this reader lacks */
	PLAN_ERR_TRUNCATED   = 12, /* the file ends before its structures do */
	PLAN_ERR_CHECKSUM    = 13, /* a header, payload or content checksum fails */
	PLAN_ERR_CORRUPT     = 14, /* a section or record breaks the format */
	PLAN_ERR_RESERVED    = 15, /* a reserved field or flag is not zero */
	PLAN_ERR_DECOMPRESS  = 16, /* zstd refused the payload */

	/* Limits and resources. */
	PLAN_ERR_LIMIT       = 20, /* a size or count over the reader's limit */
	PLAN_ERR_IO          = 30, /* open, read, write, fsync or rename failed */
	PLAN_ERR_NOMEM       = 40, /* allocation failed */

	/* Using the model. */
	PLAN_ERR_INVALID     = 50, /* an argument or the model is inconsistent */
	PLAN_ERR_NOT_FOUND   = 51, /* a name or index that does not exist */

	PLAN_ERR_MAX_CODE    = 99  /* never returned; bounds the enum */
} plan_error;

/* A static, human-readable description of CODE ("unknown error" for a code
 * this library does not define). Never NULL. */
const char *plan_strerror(int code);

/*
 * Details of a failure. Functions that can fail take an optional
 * `struct plan_diag *` and, on failure, fill it with the code and a message
 * naming what was wrong ("section TENS: tensor 3 lies outside the arena").
 * The message never ends with a newline and never repeats plan_strerror().
 */
#define PLAN_DIAG_MESSAGE_MAX 256

struct plan_diag {
	int  code;                            /* a plan_error */
	char message[PLAN_DIAG_MESSAGE_MAX];  /* NUL-terminated, may be empty */
};

#ifdef __cplusplus
}
#endif

#endif /* PLAN_ERRORS_H */
