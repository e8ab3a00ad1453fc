/*
 * plan-atomic.c - plan_write_file never harms an existing plan and never
 * leaves a temporary file behind: a read-only directory, a write failing
 * part-way (ENOSPC), a failing fsync and a failing rename each leave the
 * old file byte for byte and the directory as it was. The failures are
 * injected through libplan's internal I/O hooks (plan__write_file_io).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "plan-sample.h"
#include "tap.h"

/* Which call fails, and how. Calls are counted per kind from 1. */
struct faults {
	unsigned write_calls, fsync_calls, rename_calls;
	unsigned fail_write_at;    /* 0: never */
	unsigned fail_fsync_at;
	unsigned fail_rename_at;
	size_t   chunk;            /* most bytes one write() takes; 0: all */
	int      err;
};

static ssize_t hook_write(void *ctx, int fd, const void *buf, size_t len)
{
	struct faults *f = ctx;

	if (++f->write_calls == f->fail_write_at) {
		errno = f->err;
		return -1;
	}
	if (f->chunk > 0 && len > f->chunk)
		len = f->chunk;
	return write(fd, buf, len);
}

static int hook_fsync(void *ctx, int fd)
{
	struct faults *f = ctx;

	if (++f->fsync_calls == f->fail_fsync_at) {
		errno = f->err;
		return -1;
	}
	return fsync(fd);
}

static int hook_rename(void *ctx, const char *from, const char *to)
{
	struct faults *f = ctx;

	if (++f->rename_calls == f->fail_rename_at) {
		errno = f->err;
		return -1;
	}
	return rename(from, to);
}

/* The names in DIR, other than . and .., joined by spaces. */
static void list_dir(const char *dir, char *out, size_t len)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	out[0] = '\0';
	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (out[0] != '\0')
			strncat(out, " ", len - strlen(out) - 1);
		strncat(out, e->d_name, len - strlen(out) - 1);
	}
	closedir(d);
}

static int file_is(const char *path, const void *data, size_t len)
{
	size_t n = 0;
	unsigned char *got = sample_slurp(path, &n);
	int same = got != NULL && n == len && memcmp(got, data, len) == 0;

	free(got);
	return same;
}

struct setup {
	char     dir[64];
	char     path[128];
	void    *old;       /* the plan file there before */
	size_t   old_len;
	void    *new;       /* the bytes of the plan being written */
	size_t   new_len;
	plan_t  *plan;
};

/* A failed write with FAULTS: PLAN_ERR_IO naming STEP and the error, the
 * old file intact, nothing else in the directory. */
static void failing_write(struct setup *s, struct faults *f, const char *step, const char *what)
{
	struct plan__io io = { hook_write, hook_fsync, hook_rename, f };
	struct plan_diag d = { 0 };
	char names[512], want[256];
	int err = plan__write_file_io(s->plan, s->path, &io, &d);

	snprintf(want, sizeof want, "%s: %s failed: %s", s->path, step, strerror(f->err));
	is_int(err, PLAN_ERR_IO, "%s: the write fails with an I/O error", what);
	is_str(d.message, want, "%s: the message names the path, the step and the error", what);
	ok(file_is(s->path, s->old, s->old_len), "%s: the old plan is intact", what);
	list_dir(s->dir, names, sizeof names);
	is_str(names, "model.plan", "%s: no temporary file is left", what);
}

int main(void)
{
	struct setup s = { .dir = "/tmp/plan-atomic.XXXXXX" };
	struct plan_diag d = { 0 };
	plan_t *old = sample_vector();
	char names[512];
	struct faults f;

	umask(022);
	if (mkdtemp(s.dir) == NULL)
		tap_skip_all("cannot make a temporary directory");
	snprintf(s.path, sizeof s.path, "%s/model.plan", s.dir);
	s.plan = sample_rich();
	if (old == NULL || s.plan == NULL || plan_write_memory(old, &s.old, &s.old_len, NULL) != 0 ||
	    plan_write_memory(s.plan, &s.new, &s.new_len, NULL) != 0)
		tap_skip_all("cannot build the sample plans");

	is_int(plan_write_file(old, s.path, &d), 0, "a plan is written to a new file");
	ok(file_is(s.path, s.old, s.old_len), "the file holds the plan's bytes");
	{
		struct stat st;
		ok(stat(s.path, &st) == 0 && (st.st_mode & 0777) == 0644,
		   "a new plan gets the umask's permissions (0644 under umask 022), not 0600");
	}

	memset(&f, 0, sizeof f);
	f.chunk = 100;
	f.fail_write_at = 4;
	f.err = ENOSPC;
	failing_write(&s, &f, "write", "ENOSPC after 300 bytes");
	ok(f.write_calls == 4, "the write failed part-way, after three partial writes");

	memset(&f, 0, sizeof f);
	f.fail_write_at = 1;
	f.err = EIO;
	failing_write(&s, &f, "write", "EIO on the first write");

	memset(&f, 0, sizeof f);
	f.fail_fsync_at = 1;
	f.err = EIO;
	failing_write(&s, &f, "fsync", "fsync failing");

	memset(&f, 0, sizeof f);
	f.fail_rename_at = 1;
	f.err = EXDEV;
	failing_write(&s, &f, "rename", "rename failing");

	/* After the rename, a failing directory fsync is reported, but the
	 * new plan is already in place. */
	memset(&f, 0, sizeof f);
	f.fail_fsync_at = 2;
	f.err = EIO;
	{
		struct plan__io io = { hook_write, hook_fsync, hook_rename, &f };
		is_int(plan__write_file_io(s.plan, s.path, &io, &d), PLAN_ERR_IO,
		       "a failing directory fsync is an I/O error");
		ok(strstr(d.message, "the new plan is in place") != NULL, "that says the plan is in place (%s)",
		   d.message);
		ok(file_is(s.path, s.new, s.new_len), "and it is");
		list_dir(s.dir, names, sizeof names);
		is_str(names, "model.plan", "no temporary file is left");
	}

	/* Short writes are carried on to the end. */
	memset(&f, 0, sizeof f);
	f.chunk = 7;
	{
		struct plan__io io = { hook_write, hook_fsync, hook_rename, &f };
		is_int(plan__write_file_io(old, s.path, &io, &d), 0, "short writes are resumed");
		ok(file_is(s.path, s.old, s.old_len), "the file is whole after %u writes of 7 bytes",
		   f.write_calls);
	}

	if (geteuid() == 0) {
		tap_skip(4, "running as root: a read-only directory does not stop root");
	} else {
		chmod(s.dir, 0555);
		memset(&f, 0, sizeof f);
		is_int(plan_write_file(s.plan, s.path, &d), PLAN_ERR_IO, "a read-only directory: I/O error");
		ok(strstr(d.message, s.path) != NULL && strstr(d.message, strerror(EACCES)) != NULL,
		   "the message names the path and the error (%s)", d.message);
		chmod(s.dir, 0755);
		ok(file_is(s.path, s.old, s.old_len), "the old plan is intact");
		list_dir(s.dir, names, sizeof names);
		is_str(names, "model.plan", "no temporary file is left");
	}

	{
		char missing[192];
		plan_t *q = NULL;
		snprintf(missing, sizeof missing, "%s/no/such/dir/x.plan", s.dir);
		is_int(plan_write_file(s.plan, missing, &d), PLAN_ERR_IO, "a missing directory: I/O error");
		ok(strstr(d.message, missing) != NULL, "naming the path (%s)", d.message);
		is_int(plan_read_file(missing, NULL, &q, &d), PLAN_ERR_IO, "reading a missing file: I/O error");
		ok(q == NULL && strstr(d.message, missing) != NULL && strstr(d.message, "open") != NULL,
		   "naming the path and the step (%s)", d.message);
		is_int(plan_read_file(s.dir, NULL, &q, &d), PLAN_ERR_IO, "reading a directory: I/O error");
		is_int(plan_write_file(s.plan, "", &d), PLAN_ERR_INVALID, "writing to an empty path is refused");
		snprintf(missing, sizeof missing, "%s/", s.dir);
		is_int(plan_write_file(s.plan, missing, &d), PLAN_ERR_INVALID,
		       "writing to a path ending in / is refused");
	}

	unlink(s.path);
	list_dir(s.dir, names, sizeof names);
	is_str(names, "", "the scratch directory is empty at the end");
	rmdir(s.dir);
	free(s.old);
	free(s.new);
	plan_free(s.plan);
	plan_free(old);
	return tap_done();
}
