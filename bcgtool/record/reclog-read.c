/*
 * reclog-read.c - the reader of the raw recording log (reclog.h): the
 * whole file in memory, an index of its records, and a cursor over a
 * record's fields. A log cut short (the program crashed) reads up to its
 * last whole record and says so; anything else malformed is an error.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/reclog.h"

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const uint8_t *p)
{
	return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

/* Index the records of LOG->bytes. */
static int log_index(struct reclog *log, char *err, size_t errlen)
{
	size_t pos = RECLOG_HEADER_BYTES, cap = 0;

	if (log->size < RECLOG_HEADER_BYTES || memcmp(log->bytes, RECLOG_MAGIC, 8) != 0) {
		snprintf(err, errlen, "not a recording log");
		return -1;
	}
	log->version = rd32(log->bytes + 8);
	log->pid = rd32(log->bytes + 12);
	if (log->version != RECLOG_VERSION) {
		snprintf(err, errlen, "recording log version %u, this bcgtool reads %u",
		         log->version, RECLOG_VERSION);
		return -1;
	}
	while (pos < log->size) {
		struct reclog_record *r;
		uint32_t len;

		if (log->size - pos < RECLOG_RECORD_HEADER_BYTES) {
			log->truncated = 1;
			break;
		}
		len = rd32(log->bytes + pos + 4);
		if (log->size - pos - RECLOG_RECORD_HEADER_BYTES < len) {
			log->truncated = 1;
			break;
		}
		if (log->nrec == cap) {
			size_t ncap = cap ? cap * 2 : 1024;
			r = realloc(log->rec, ncap * sizeof *r);
			if (r == NULL) {
				snprintf(err, errlen, "out of memory");
				return -1;
			}
			log->rec = r;
			cap = ncap;
		}
		r = &log->rec[log->nrec];
		r->type = rd32(log->bytes + pos);
		r->time = rd64(log->bytes + pos + 8);
		r->seq = log->nrec;
		r->data = log->bytes + pos + RECLOG_RECORD_HEADER_BYTES;
		r->len = len;
		if (r->type == RECLOG_END)
			log->ended = 1;
		log->nrec++;
		pos += RECLOG_RECORD_HEADER_BYTES + (size_t)len;
	}
	return 0;
}

int reclog_read_memory(const void *data, size_t len, struct reclog **out, char *err,
                       size_t errlen)
{
	struct reclog *log = calloc(1, sizeof *log);

	*out = NULL;
	if (log == NULL || (log->bytes = malloc(len ? len : 1)) == NULL) {
		free(log);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	memcpy(log->bytes, data, len);
	log->size = len;
	if (log_index(log, err, errlen) != 0) {
		reclog_free(log);
		return -1;
	}
	*out = log;
	return 0;
}

int reclog_read_file(const char *path, struct reclog **out, char *err, size_t errlen)
{
	struct reclog *log = calloc(1, sizeof *log);
	FILE *f = NULL;
	long size;

	*out = NULL;
	if (log == NULL || (log->path = strdup(path)) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	f = fopen(path, "rb");
	if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) != 0) {
		snprintf(err, errlen, "cannot read: %s", strerror(errno));
		goto fail;
	}
	log->size = (size_t)size;
	log->bytes = malloc(log->size ? log->size : 1);
	if (log->bytes == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (fread(log->bytes, 1, log->size, f) != log->size) {
		snprintf(err, errlen, "cannot read: %s", ferror(f) ? strerror(errno) : "short read");
		goto fail;
	}
	fclose(f);
	f = NULL;
	if (log_index(log, err, errlen) != 0)
		goto fail;
	*out = log;
	return 0;
fail:
	if (f != NULL)
		fclose(f);
	reclog_free(log);
	return -1;
}

void reclog_free(struct reclog *log)
{
	if (log == NULL)
		return;
	free(log->path);
	free(log->bytes);
	free(log->rec);
	free(log);
}

void reclog_cur_init(struct reclog_cur *c, const struct reclog_record *r)
{
	c->p = r->data;
	c->end = r->data + r->len;
	c->bad = 0;
}

uint32_t reclog_get_u32(struct reclog_cur *c)
{
	uint32_t v;

	if (c->end - c->p < 4) {
		c->bad = 1;
		c->p = c->end;
		return 0;
	}
	v = rd32(c->p);
	c->p += 4;
	return v;
}

uint64_t reclog_get_u64(struct reclog_cur *c)
{
	uint64_t v;

	if (c->end - c->p < 8) {
		c->bad = 1;
		c->p = c->end;
		return 0;
	}
	v = rd64(c->p);
	c->p += 8;
	return v;
}

const uint8_t *reclog_get_bytes(struct reclog_cur *c, uint32_t *len)
{
	uint32_t n = reclog_get_u32(c);
	const uint8_t *p = c->p;

	if (c->bad || (size_t)(c->end - c->p) < n) {
		c->bad = 1;
		c->p = c->end;
		*len = 0;
		return c->end;
	}
	c->p += n;
	*len = n;
	return p;
}

const char *reclog_get_str(struct reclog_cur *c, char *buf, size_t len)
{
	uint32_t n;
	const uint8_t *p = reclog_get_bytes(c, &n);

	if (len == 0)
		return buf;
	if (n >= len)
		n = (uint32_t)(len - 1);
	memcpy(buf, p, n);
	buf[n] = '\0';
	return buf;
}

char *reclog_get_strdup(struct reclog_cur *c)
{
	uint32_t n;
	const uint8_t *p = reclog_get_bytes(c, &n);
	char *s = malloc((size_t)n + 1);

	if (s == NULL)
		return NULL;
	memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

const char *reclog_type_name(uint32_t type)
{
	static const char *const names[] = {
		[RECLOG_PROCESS] = "process",
		[RECLOG_DEVICE] = "device",
		[RECLOG_LIBRARY] = "library",
		[RECLOG_NOTE] = "note",
		[RECLOG_MODULE] = "module",
		[RECLOG_FUNCTION] = "function",
		[RECLOG_ALLOC] = "alloc",
		[RECLOG_FREE] = "free",
		[RECLOG_KERNEL] = "kernel",
		[RECLOG_MEMCPY] = "memcpy",
		[RECLOG_MEMSET] = "memset",
		[RECLOG_CAPTURE_BEGIN] = "capture-begin",
		[RECLOG_CAPTURE_END] = "capture-end",
		[RECLOG_GRAPH] = "graph",
		[RECLOG_GRAPH_LAUNCH] = "graph-launch",
		[RECLOG_RANGE_PUSH] = "range-push",
		[RECLOG_RANGE_POP] = "range-pop",
		[RECLOG_RANGE_START] = "range-start",
		[RECLOG_RANGE_END] = "range-end",
		[RECLOG_ACTIVITY] = "activity",
		[RECLOG_SNAPSHOT] = "snapshot",
		[RECLOG_END] = "end",
		[RECLOG_GRAPH_UPDATE] = "graph-update",
		[RECLOG_GRAPH_NODE_SET] = "graph-node-set",
		[RECLOG_MODULE_HANDLE] = "module-handle",
		[RECLOG_MODULE_UNLOAD] = "module-unload",
	};

	if (type < sizeof names / sizeof names[0] && names[type] != NULL)
		return names[type];
	return "?";
}
