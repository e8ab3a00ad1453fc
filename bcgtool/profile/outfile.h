/*
 * outfile.h - write a file atomically: into a temporary file beside it,
 * renamed over it once complete, so a reader never sees half a file and a
 * failed write leaves the old one in place.
 */
#ifndef BCG_PROFILE_OUTFILE_H
#define BCG_PROFILE_OUTFILE_H

#include <stdio.h>

struct outfile {
	FILE *f;
	char *tmp;
	char *path;
};

/* Open a temporary file for PATH. 0, or -1 with the reason in MSG. */
int outfile_open(struct outfile *o, const char *path, char *msg, size_t len);

/* Close and rename it over PATH. 0, or -1 with the reason in MSG (the
 * temporary file removed). */
int outfile_commit(struct outfile *o, char *msg, size_t len);

/* Give up: close and remove the temporary file. */
void outfile_abort(struct outfile *o);

#endif /* BCG_PROFILE_OUTFILE_H */
