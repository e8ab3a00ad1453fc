/*
 * nsys.c - read an Nsight Systems SQLite export with SQLite.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nsys.h"
#include "util.h"

#ifdef HAVE_SQLITE
#include <sqlite3.h>
#endif

int nsys_have_sqlite(void)
{
#ifdef HAVE_SQLITE
	return 1;
#else
	return 0;
#endif
}

static int fail(char *msg, size_t len, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail(char *msg, size_t len, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, len, fmt, ap);
	va_end(ap);
	return rc;
}

void nsys_release(struct nsys_trace *t)
{
	for (size_t i = 0; i < t->nstrings; i++)
		free(t->strings[i]);
	free(t->strings);
	free(t->kernels);
	free(t->ranges);
	free(t->calls);
	memset(t, 0, sizeof *t);
}

static int call_cmp_corr(const void *a, const void *b)
{
	const struct nsys_call *x = a, *y = b;
	return x->corr < y->corr ? -1 : x->corr > y->corr;
}

const struct nsys_call *nsys_find_call(const struct nsys_trace *t, int64_t corr)
{
	struct nsys_call key = { .corr = corr };

	return bsearch(&key, t->calls, t->ncalls, sizeof key, call_cmp_corr);
}

#ifdef HAVE_SQLITE

static const char *keep(struct nsys_trace *t, const unsigned char *s)
{
	if (s == NULL)
		s = (const unsigned char *)"";
	if (t->nstrings == t->capstrings) {
		t->capstrings = t->capstrings ? 2 * t->capstrings : 256;
		t->strings = xreallocarray(t->strings, t->capstrings, sizeof *t->strings);
	}
	t->strings[t->nstrings] = xstrdup((const char *)s);
	return t->strings[t->nstrings++];
}

static int has_table(sqlite3 *db, const char *name)
{
	sqlite3_stmt *st;
	int found = 0;

	if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type IN ('table','view') "
	                       "AND name = ?", -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	found = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	return found;
}

static int has_column(sqlite3 *db, const char *table, const char *col)
{
	char *q = xasprintf("SELECT 1 FROM pragma_table_info('%s') WHERE name = ?", table);
	sqlite3_stmt *st;
	int found = 0;

	if (sqlite3_prepare_v2(db, q, -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_text(st, 1, col, -1, SQLITE_STATIC);
		found = sqlite3_step(st) == SQLITE_ROW;
		sqlite3_finalize(st);
	}
	free(q);
	return found;
}

static int64_t col_i64(sqlite3_stmt *st, int col, int64_t none)
{
	return sqlite3_column_type(st, col) == SQLITE_NULL ? none : sqlite3_column_int64(st, col);
}

/* The error of a failed SQLite call: an I/O or memory failure is a run-time
 * error, anything else says the file is no export. */
static int sql_fail(sqlite3 *db, char *msg, size_t len, const char *what)
{
	int code = sqlite3_errcode(db);

	if (code == SQLITE_NOTADB)
		return fail(msg, len, 2, "not an SQLite database (give the .sqlite export of an "
		            "Nsight Systems report, or the .nsys-rep)");
	if (code == SQLITE_NOMEM || code == SQLITE_IOERR)
		return fail(msg, len, 3, "%s: %s", what, sqlite3_errmsg(db));
	return fail(msg, len, 2, "%s: %s", what, sqlite3_errmsg(db));
}

static int read_kernels(sqlite3 *db, struct nsys_trace *t, char *msg, size_t len)
{
	int node = has_column(db, "CUPTI_ACTIVITY_KIND_KERNEL", "graphNodeId");
	int mangled = has_column(db, "CUPTI_ACTIVITY_KIND_KERNEL", "mangledName");
	int orig = t->has_node_events;
	char *q;
	sqlite3_stmt *st;
	size_t cap = 0;
	int rc;

	q = xasprintf("SELECT k.rowid, k.start, k.end, k.correlationId, %s, %s, "
	              "k.gridX, k.gridY, k.gridZ, k.blockX, k.blockY, k.blockZ, s.value, %s "
	              "FROM CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN StringIds s ON s.id = k.shortName "
	              "%s %s ORDER BY k.start, k.rowid",
	              node ? "k.graphNodeId" : "NULL",
	              node && orig ? "g.o" : "NULL",
	              mangled ? "m.value" : "NULL",
	              mangled ? "LEFT JOIN StringIds m ON m.id = k.mangledName" : "",
	              node && orig ? "LEFT JOIN (SELECT graphNodeId AS id, MAX(originalGraphNodeId) "
	                             "AS o FROM CUDA_GRAPH_NODE_EVENTS GROUP BY graphNodeId) g "
	                             "ON g.id = k.graphNodeId" : "");
	rc = sqlite3_prepare_v2(db, q, -1, &st, NULL);
	free(q);
	if (rc != SQLITE_OK)
		return sql_fail(db, msg, len, "reading CUPTI_ACTIVITY_KIND_KERNEL");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct nsys_kernel *k;
		if (t->nkernels == cap) {
			cap = cap ? 2 * cap : 1024;
			t->kernels = xreallocarray(t->kernels, cap, sizeof *t->kernels);
		}
		k = &t->kernels[t->nkernels];
		memset(k, 0, sizeof *k);
		k->row = sqlite3_column_int64(st, 0);
		k->start = col_i64(st, 1, NSYS_NONE);
		k->end = col_i64(st, 2, NSYS_NONE);
		k->corr = col_i64(st, 3, NSYS_NONE);
		k->node = col_i64(st, 4, NSYS_NONE);
		k->orig_node = col_i64(st, 5, NSYS_NONE);
		for (int d = 0; d < 3; d++) {
			k->grid[d] = (uint32_t)sqlite3_column_int64(st, 6 + d);
			k->block[d] = (uint32_t)sqlite3_column_int64(st, 9 + d);
		}
		k->name = keep(t, sqlite3_column_text(st, 12));
		k->mangled = sqlite3_column_type(st, 13) == SQLITE_NULL ? k->name
		           : keep(t, sqlite3_column_text(st, 13));
		if (k->start < 0 || k->end < k->start) {
			sqlite3_finalize(st);
			return fail(msg, len, 2, "kernel %s (CUPTI_ACTIVITY_KIND_KERNEL row %lld) %s: "
			            "start %lld, end %lld", k->name, (long long)k->row,
			            k->start < 0 ? "starts before the trace" : "ends before it starts",
			            (long long)k->start, (long long)k->end);
		}
		t->nkernels++;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return sql_fail(db, msg, len, "reading CUPTI_ACTIVITY_KIND_KERNEL");
	return 0;
}

static int read_ranges(sqlite3 *db, struct nsys_trace *t, char *msg, size_t len)
{
	int text_id = has_column(db, "NVTX_EVENTS", "textId");
	int payload = has_column(db, "NVTX_EVENTS", "uint64Value");
	char *q;
	sqlite3_stmt *st;
	size_t cap = 0;
	int rc;

	q = xasprintf("SELECT e.rowid, e.start, e.end, e.globalTid, %s, %s FROM NVTX_EVENTS e %s "
	              "WHERE e.end IS NOT NULL ORDER BY e.start, e.rowid",
	              text_id ? "COALESCE(e.text, s.value)" : "e.text",
	              payload ? "e.uint64Value" : "NULL",
	              text_id ? "LEFT JOIN StringIds s ON s.id = e.textId" : "");
	rc = sqlite3_prepare_v2(db, q, -1, &st, NULL);
	free(q);
	if (rc != SQLITE_OK)
		return sql_fail(db, msg, len, "reading NVTX_EVENTS");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct nsys_range *r;
		int64_t row = sqlite3_column_int64(st, 0);
		if (sqlite3_column_type(st, 4) == SQLITE_NULL)
			continue;      /* unnamed: not ours */
		if (t->nranges == cap) {
			cap = cap ? 2 * cap : 256;
			t->ranges = xreallocarray(t->ranges, cap, sizeof *t->ranges);
		}
		r = &t->ranges[t->nranges];
		r->start = sqlite3_column_int64(st, 1);
		r->end = sqlite3_column_int64(st, 2);
		r->tid = col_i64(st, 3, 0);
		r->payload = (uint64_t)col_i64(st, 5, 0);
		r->text = keep(t, sqlite3_column_text(st, 4));
		if (r->start < 0 || r->end < r->start) {
			sqlite3_finalize(st);
			return fail(msg, len, 2, "NVTX range '%s' (NVTX_EVENTS row %lld) %s: "
			            "start %lld, end %lld", r->text, (long long)row,
			            r->start < 0 ? "starts before the trace" : "ends before it starts",
			            (long long)r->start, (long long)r->end);
		}
		t->nranges++;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return sql_fail(db, msg, len, "reading NVTX_EVENTS");
	return 0;
}

/* The calls of TABLE (the runtime's, or the driver's) appended to T. */
static int read_call_table(sqlite3 *db, struct nsys_trace *t, const char *table, size_t *cap,
                           char *msg, size_t len)
{
	char *q = xasprintf("SELECT start, end, globalTid, correlationId FROM %s "
	                    "WHERE correlationId IS NOT NULL", table);
	char *what = xasprintf("reading %s", table);
	sqlite3_stmt *st;
	int rc;

	rc = sqlite3_prepare_v2(db, q, -1, &st, NULL);
	free(q);
	if (rc != SQLITE_OK) {
		rc = sql_fail(db, msg, len, what);
		free(what);
		return rc;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct nsys_call *c;
		if (t->ncalls == *cap) {
			*cap = *cap ? 2 * *cap : 1024;
			t->calls = xreallocarray(t->calls, *cap, sizeof *t->calls);
		}
		c = &t->calls[t->ncalls++];
		c->start = sqlite3_column_int64(st, 0);
		c->end = sqlite3_column_int64(st, 1);
		c->tid = col_i64(st, 2, 0);
		c->corr = sqlite3_column_int64(st, 3);
	}
	sqlite3_finalize(st);
	rc = rc != SQLITE_DONE ? sql_fail(db, msg, len, what) : 0;
	free(what);
	return rc;
}

/* The runtime's calls, and the driver's where the export has them: a
 * library such as NCCL launches its kernels through the driver
 * (cuLaunchKernelEx), so their correlation ids are only there. A
 * correlation id in both tables keeps the runtime's call. */
static int read_calls(sqlite3 *db, struct nsys_trace *t, char *msg, size_t len)
{
	size_t cap = 0, nrt, k = 0;
	int rc;

	if ((rc = read_call_table(db, t, "CUPTI_ACTIVITY_KIND_RUNTIME", &cap, msg, len)) != 0)
		return rc;
	nrt = t->ncalls;
	if (has_table(db, "CUPTI_ACTIVITY_KIND_DRIVER") == 1 &&
	    has_column(db, "CUPTI_ACTIVITY_KIND_DRIVER", "correlationId") &&
	    (rc = read_call_table(db, t, "CUPTI_ACTIVITY_KIND_DRIVER", &cap, msg, len)) != 0)
		return rc;
	if (t->ncalls == 0)
		return 0;
	if (t->ncalls > nrt) {
		struct nsys_call *all = t->calls;
		qsort(all, nrt, sizeof *all, call_cmp_corr);
		qsort(all + nrt, t->ncalls - nrt, sizeof *all, call_cmp_corr);
		/* merge, dropping a driver call whose id a runtime call has */
		struct nsys_call *m = xcalloc(t->ncalls, sizeof *m);
		size_t a = 0, b = nrt;
		while (a < nrt || b < t->ncalls) {
			if (b == t->ncalls || (a < nrt && all[a].corr <= all[b].corr)) {
				if (b < t->ncalls && all[a].corr == all[b].corr)
					b++;
				m[k++] = all[a++];
			} else {
				m[k++] = all[b++];
			}
		}
		free(t->calls);
		t->calls = m;
		t->ncalls = k;
	} else {
		qsort(t->calls, t->ncalls, sizeof *t->calls, call_cmp_corr);
	}
	return 0;
}

static void read_text(sqlite3 *db, const char *sql, char *out, size_t len)
{
	sqlite3_stmt *st;

	out[0] = '\0';
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return;
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
		snprintf(out, len, "%s", (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
}

int nsys_read(const char *path, struct nsys_trace *t, char *msg, size_t len)
{
	static const char *const need[] = {
		"StringIds", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME",
		"NVTX_EVENTS",
	};
	static const char magic[16] = "SQLite format 3";
	char head[16] = { 0 };
	sqlite3 *db = NULL;
	FILE *f;
	int rc = 0;

	memset(t, 0, sizeof *t);
	if ((f = fopen(path, "rb")) == NULL)
		return fail(msg, len, 2, "cannot read: %s", strerror(errno));
	if (fread(head, 1, sizeof head, f) != sizeof head || memcmp(head, magic, sizeof magic) != 0) {
		fclose(f);
		return fail(msg, len, 2, "not an SQLite database (give the .sqlite export of an "
		            "Nsight Systems report, or the .nsys-rep)");
	}
	fclose(f);
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		rc = sql_fail(db, msg, len, "opening it");
		goto out;
	}
	for (size_t i = 0; i < sizeof need / sizeof need[0]; i++) {
		int h = has_table(db, need[i]);
		if (h < 0) {
			rc = sql_fail(db, msg, len, "reading its tables");
			goto out;
		}
		if (h == 0) {
			rc = fail(msg, len, 2, "no %s table: not an Nsight Systems export of a profile "
			          "with --trace=cuda,nvtx", need[i]);
			goto out;
		}
	}
	t->has_node_events = has_table(db, "CUDA_GRAPH_NODE_EVENTS") == 1;
	if ((rc = read_kernels(db, t, msg, len)) != 0 || (rc = read_ranges(db, t, msg, len)) != 0 ||
	    (rc = read_calls(db, t, msg, len)) != 0)
		goto out;
	if (has_table(db, "META_DATA_EXPORT") == 1)
		read_text(db, "SELECT value FROM META_DATA_EXPORT WHERE name = 'EXPORT_PRODUCT_VERSION'",
		          t->version, sizeof t->version);
	if (has_table(db, "TARGET_INFO_GPU") == 1)
		read_text(db, "SELECT name FROM TARGET_INFO_GPU ORDER BY id LIMIT 1", t->device,
		          sizeof t->device);
out:
	sqlite3_close(db);
	if (rc != 0)
		nsys_release(t);
	return rc;
}

#else /* !HAVE_SQLITE */

int nsys_read(const char *path, struct nsys_trace *t, char *msg, size_t len)
{
	(void)path;
	memset(t, 0, sizeof *t);
	return fail(msg, len, 2, NSYS_NO_SQLITE_MSG);
}

#endif
