/*
 * outfile.c - atomic file writes (see outfile.h).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outfile.h"
#include "util.h"

int outfile_open(struct outfile *o, const char *path, char *msg, size_t len)
{
	int fd;

	o->path = xstrdup(path);
	o->tmp = xasprintf("%s.tmpXXXXXX", path);
	o->f = NULL;
	if ((fd = mkstemp(o->tmp)) < 0) {
		snprintf(msg, len, "%s", strerror(errno));
		free(o->tmp);
		free(o->path);
		o->tmp = o->path = NULL;
		return -1;
	}
	/* mkstemp makes it 0600; give it the mode a new file would get */
	{
		mode_t mask = umask(0);
		umask(mask);
		(void)fchmod(fd, 0666 & ~mask);
	}
	if ((o->f = fdopen(fd, "w")) == NULL) {
		snprintf(msg, len, "%s", strerror(errno));
		close(fd);
		outfile_abort(o);
		return -1;
	}
	return 0;
}

void outfile_abort(struct outfile *o)
{
	if (o->f != NULL)
		fclose(o->f);
	if (o->tmp != NULL)
		unlink(o->tmp);
	free(o->tmp);
	free(o->path);
	o->f = NULL;
	o->tmp = o->path = NULL;
}

int outfile_commit(struct outfile *o, char *msg, size_t len)
{
	int bad = ferror(o->f);

	if (fclose(o->f) != 0 || bad) {
		snprintf(msg, len, "writing it: %s", bad ? "I/O error" : strerror(errno));
		o->f = NULL;
		outfile_abort(o);
		return -1;
	}
	o->f = NULL;
	if (rename(o->tmp, o->path) != 0) {
		snprintf(msg, len, "%s", strerror(errno));
		outfile_abort(o);
		return -1;
	}
	free(o->tmp);
	free(o->path);
	o->tmp = o->path = NULL;
	return 0;
}
