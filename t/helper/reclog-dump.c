/*
 * reclog-dump.c - print a recording log (bcgtool/record/reclog.h) one
 * record a line, for tests: the type's name, and for NVTX records the
 * thread or range and the message; "truncated" and "no end" when the log
 * says so.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>

#include "record/reclog.h"

int main(int argc, char **argv)
{
	struct reclog *log;
	char err[256], text[512];

	if (argc != 2) {
		fprintf(stderr, "usage: reclog-dump LOG\n");
		return 2;
	}
	if (reclog_read_file(argv[1], &log, err, sizeof err) != 0) {
		fprintf(stderr, "reclog-dump: %s: %s\n", argv[1], err);
		return 1;
	}
	printf("version %u\n", log->version);
	for (size_t i = 0; i < log->nrec; i++) {
		const struct reclog_record *r = &log->rec[i];
		struct reclog_cur c;

		reclog_cur_init(&c, r);
		printf("%s", reclog_type_name(r->type));
		if (r->type == RECLOG_RANGE_PUSH || r->type == RECLOG_RANGE_START) {
			(void)reclog_get_u64(&c);
			printf(" %s", reclog_get_str(&c, text, sizeof text));
		} else if (r->type == RECLOG_NOTE || r->type == RECLOG_LIBRARY) {
			printf(" %s", reclog_get_str(&c, text, sizeof text));
		}
		putchar('\n');
	}
	if (log->truncated)
		printf("truncated\n");
	if (!log->ended)
		printf("no end\n");
	reclog_free(log);
	return 0;
}
