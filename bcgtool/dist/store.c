/*
 * dist/store.c - an external launcher's ranks: the environment that says
 * which rank this process is, and the file through which rank 0 hands
 * the others the unique id.
 *
 * The store file is text, so that a person can see what it holds:
 *
 *   bcgtool-dist-store 1
 *   world 2
 *   id 4a0b...            (the id's bytes in hex)
 *
 * Rank 0 writes it to a temporary file and renames that over the path,
 * so a reader sees the whole file or none. The others wait for it.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "util.h"

#define STORE_MAGIC "bcgtool-dist-store 1"
/* How often a rank looks for the store file, in seconds. */
#define STORE_POLL_S 0.02

/* VAR's value as an int in [MIN, MAX]: 0, 1 when unset, -1 with MSG. */
static int env_int(const char *var, int min, int max, int *out, char *msg, size_t len)
{
	const char *v = getenv(var);
	char *end;
	long n;

	if (v == NULL)
		return 1;
	errno = 0;
	n = strtol(v, &end, 10);
	if (*v == '\0' || *end != '\0' || errno != 0 || n < min || n > max) {
		snprintf(msg, len, "environment: %s=%s: not an integer from %d to %d", var, v, min,
		         max);
		return -1;
	}
	*out = (int)n;
	return 0;
}

int dist_env_read(struct dist_env *env, char *msg, size_t len)
{
	int rc;

	memset(env, 0, sizeof *env);
	env->world_var = "WORLD_SIZE";
	env->rank_var = "RANK";
	env->local_var = "LOCAL_RANK";
	if (getenv("WORLD_SIZE") == NULL && getenv("OMPI_COMM_WORLD_SIZE") != NULL) {
		env->world_var = "OMPI_COMM_WORLD_SIZE";
		env->rank_var = "OMPI_COMM_WORLD_RANK";
		env->local_var = "OMPI_COMM_WORLD_LOCAL_RANK";
	}
	rc = env_int(env->world_var, 1, 65536, &env->world, msg, len);
	if (rc != 0)
		return rc > 0 ? 0 : -1;
	rc = env_int(env->rank_var, 0, env->world - 1, &env->rank, msg, len);
	if (rc > 0)
		snprintf(msg, len, "environment: %s=%d but %s is not set", env->world_var,
		         env->world, env->rank_var);
	if (rc != 0)
		return -1;
	rc = env_int(env->local_var, 0, 4095, &env->local_rank, msg, len);
	if (rc > 0)
		snprintf(msg, len, "environment: %s=%d but %s (this rank's GPU) is not set",
		         env->world_var, env->world, env->local_var);
	if (rc != 0)
		return -1;
	env->store = getenv("BCG_DIST_STORE");
	if (env->store != NULL && *env->store == '\0')
		env->store = NULL;
	if (env->world > 1 && env->store == NULL) {
		snprintf(msg, len, "environment: %s=%d but BCG_DIST_STORE (the file through which "
		         "rank 0 hands the others the NCCL unique id) is not set", env->world_var,
		         env->world);
		return -1;
	}
	return 1;
}

int dist_external(int *world, int *rank, char *msg, size_t len)
{
	struct dist_env env;
	int rc = dist_env_read(&env, msg, len);

	if (rc == 1) {
		*world = env.world;
		*rank = env.rank;
	}
	return rc;
}

int dist_store_put(const char *path, int world, const void *id, size_t size, char *msg,
                   size_t len)
{
	const unsigned char *b = id;
	struct bcg_output o;
	char why[512];

	if (bcg_output_try_open(&o, path, 1, why, sizeof why) != 0) {
		snprintf(msg, len, "rank 0: BCG_DIST_STORE %s: %s", path, why);
		return -1;
	}
	fprintf(o.f, STORE_MAGIC "\nworld %d\nid ", world);
	for (size_t i = 0; i < size; i++)
		fprintf(o.f, "%02x", b[i]);
	fputc('\n', o.f);
	if (bcg_output_try_commit(&o, NULL, 0, why, sizeof why) != 0) {
		snprintf(msg, len, "rank 0: BCG_DIST_STORE %s: %s", path, why);
		return -1;
	}
	return 0;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* The id of the store file's text TEXT. */
static int store_parse(const char *path, const char *text, int world, unsigned char *id,
                       size_t size, char *msg, size_t len)
{
	const char *p = text;
	char *end;
	long w;

	if (strncmp(p, STORE_MAGIC "\n", sizeof STORE_MAGIC) != 0) {
		snprintf(msg, len, "BCG_DIST_STORE %s:1: not a store file of bcgtool (its first line "
		         "is not \"" STORE_MAGIC "\")", path);
		return -1;
	}
	p += sizeof STORE_MAGIC;
	if (strncmp(p, "world ", 6) != 0) {
		snprintf(msg, len, "BCG_DIST_STORE %s:2: \"world N\" expected", path);
		return -1;
	}
	w = strtol(p + 6, &end, 10);
	if (end == p + 6 || *end != '\n') {
		snprintf(msg, len, "BCG_DIST_STORE %s:2: \"world N\" expected", path);
		return -1;
	}
	if (w != world) {
		snprintf(msg, len, "BCG_DIST_STORE %s:2: written for a world of %ld ranks, this one "
		         "has %d (a file left from another run?)", path, w, world);
		return -1;
	}
	p = end + 1;
	if (strncmp(p, "id ", 3) != 0) {
		snprintf(msg, len, "BCG_DIST_STORE %s:3: \"id HEX\" expected", path);
		return -1;
	}
	p += 3;
	for (size_t i = 0; i < size; i++) {
		int hi = hex_digit(p[2 * i]), lo = hi < 0 ? -1 : hex_digit(p[2 * i + 1]);

		if (hi < 0 || lo < 0) {
			snprintf(msg, len, "BCG_DIST_STORE %s:3: the id is not %zu bytes in hex", path,
			         size);
			return -1;
		}
		id[i] = (unsigned char)(hi << 4 | lo);
	}
	if (p[2 * size] != '\n' || p[2 * size + 1] != '\0') {
		snprintf(msg, len, "BCG_DIST_STORE %s:3: the id is not %zu bytes in hex", path, size);
		return -1;
	}
	return 0;
}

int dist_store_get(const char *path, int world, void *id, size_t size, double timeout_s,
                   char *msg, size_t len)
{
	double start = dist_now();
	char why[512];

	for (;;) {
		struct timespec ts = {0, (long)(STORE_POLL_S * 1e9)};
		FILE *f = fopen(path, "r");

		if (f != NULL) {
			char text[64 + 2 * DIST_ID_MAX];
			size_t n = fread(text, 1, sizeof text - 1, f);
			int bad = ferror(f);

			fclose(f);
			if (bad) {
				snprintf(msg, len, "BCG_DIST_STORE %s: cannot read", path);
				return -1;
			}
			text[n] = '\0';
			if (store_parse(path, text, world, id, size, why, sizeof why) != 0) {
				snprintf(msg, len, "%s", why);
				return -1;
			}
			return 0;
		}
		if (errno != ENOENT) {
			snprintf(msg, len, "BCG_DIST_STORE %s: cannot read: %s", path, strerror(errno));
			return -1;
		}
		if (dist_now() - start > timeout_s) {
			snprintf(msg, len, "BCG_DIST_STORE %s: no unique id after %g s (has rank 0 "
			         "started?)", path, timeout_s);
			return -1;
		}
		nanosleep(&ts, NULL);
	}
}
