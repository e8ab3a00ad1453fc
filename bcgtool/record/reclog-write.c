/*
 * reclog-write.c - the writer of the raw recording log (reclog.h).
 *
 * The recording library calls it from the program's threads and from
 * CUPTI's buffer thread, inside the program's own process: it takes one
 * lock per record, keeps a buffer of its own, and never aborts. It uses
 * nothing but libc, so that the unit tests write logs with the very code
 * the library uses.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record/reclog.h"

#define WRITER_BUFFER (1u << 20)

struct reclog_writer {
	pthread_mutex_t lock;
	int             fd;
	int             failed;
	size_t          used;
	uint8_t         buf[WRITER_BUFFER];
};

static void le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* ---------------------------------------------------------------------- */
/* Building a record.                                                      */

static void rec_reserve(struct reclog_rec *r, size_t more)
{
	size_t cap;
	uint8_t *nb;

	if (r->failed || r->len + more <= r->cap)
		return;
	cap = r->cap * 2;
	while (cap < r->len + more)
		cap *= 2;
	nb = r->buf == r->small ? malloc(cap) : realloc(r->buf, cap);
	if (nb == NULL) {
		r->failed = 1;
		return;
	}
	if (r->buf == r->small)
		memcpy(nb, r->small, r->len);
	r->buf = nb;
	r->cap = cap;
}

void reclog_rec_begin(struct reclog_rec *r, uint32_t type, uint64_t time)
{
	r->buf = r->small;
	r->cap = sizeof r->small;
	r->failed = 0;
	le32(r->buf, type);
	le32(r->buf + 4, 0);
	le64(r->buf + 8, time);
	r->len = RECLOG_RECORD_HEADER_BYTES;
}

void reclog_put_u32(struct reclog_rec *r, uint32_t v)
{
	rec_reserve(r, 4);
	if (r->failed)
		return;
	le32(r->buf + r->len, v);
	r->len += 4;
}

void reclog_put_u64(struct reclog_rec *r, uint64_t v)
{
	rec_reserve(r, 8);
	if (r->failed)
		return;
	le64(r->buf + r->len, v);
	r->len += 8;
}

void reclog_put_bytes(struct reclog_rec *r, const void *data, size_t len)
{
	if (len > UINT32_MAX - 64) {
		r->failed = 1;
		return;
	}
	reclog_put_u32(r, (uint32_t)len);
	rec_reserve(r, len);
	if (r->failed || len == 0)
		return;
	memcpy(r->buf + r->len, data, len);
	r->len += len;
}

void reclog_put_str(struct reclog_rec *r, const char *s)
{
	reclog_put_bytes(r, s != NULL ? s : "", s != NULL ? strlen(s) : 0);
}

void reclog_rec_end(struct reclog_rec *r)
{
	if (r->buf != r->small)
		free(r->buf);
	r->buf = r->small;
	r->len = 0;
}

/* ---------------------------------------------------------------------- */
/* The file.                                                               */

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t k = write(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

struct reclog_writer *reclog_open(const char *path, uint32_t pid)
{
	struct reclog_writer *w = malloc(sizeof *w);
	uint8_t head[RECLOG_HEADER_BYTES];
	int e;

	if (w == NULL)
		return NULL;
	w->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (w->fd < 0)
		goto fail;
	memcpy(head, RECLOG_MAGIC, 8);
	le32(head + 8, RECLOG_VERSION);
	le32(head + 12, pid);
	if (write_all(w->fd, head, sizeof head) != 0)
		goto fail;
	pthread_mutex_init(&w->lock, NULL);
	w->failed = 0;
	w->used = 0;
	return w;
fail:
	e = errno;
	if (w->fd >= 0) {
		close(w->fd);
		unlink(path);
	}
	free(w);
	errno = e;
	return NULL;
}

static int flush_locked(struct reclog_writer *w)
{
	if (!w->failed && w->used > 0 && write_all(w->fd, w->buf, w->used) != 0)
		w->failed = 1;
	w->used = 0;
	return w->failed ? -1 : 0;
}

int reclog_write(struct reclog_writer *w, const struct reclog_rec *r)
{
	int rc = 0;

	if (w == NULL)
		return -1;
	pthread_mutex_lock(&w->lock);
	if (r->failed || r->len - RECLOG_RECORD_HEADER_BYTES > UINT32_MAX) {
		w->failed = 1;   /* a hole would misplace what follows */
	} else {
		/* The length goes into the header here: the record is final. */
		le32(r->buf + 4, (uint32_t)(r->len - RECLOG_RECORD_HEADER_BYTES));
		if (w->used + r->len > sizeof w->buf)
			flush_locked(w);
		if (w->failed)
			;
		else if (r->len > sizeof w->buf)
			w->failed = write_all(w->fd, r->buf, r->len) != 0;
		else {
			memcpy(w->buf + w->used, r->buf, r->len);
			w->used += r->len;
		}
	}
	rc = w->failed ? -1 : 0;
	pthread_mutex_unlock(&w->lock);
	return rc;
}

int reclog_flush(struct reclog_writer *w)
{
	int rc;

	if (w == NULL)
		return -1;
	pthread_mutex_lock(&w->lock);
	rc = flush_locked(w);
	pthread_mutex_unlock(&w->lock);
	return rc;
}

int reclog_close(struct reclog_writer *w)
{
	int rc;

	if (w == NULL)
		return -1;
	rc = reclog_flush(w);
	if (close(w->fd) != 0)
		rc = -1;
	pthread_mutex_destroy(&w->lock);
	free(w);
	return rc;
}

void reclog_abandon(struct reclog_writer *w)
{
	if (w == NULL)
		return;
	close(w->fd);
	free(w);
}
