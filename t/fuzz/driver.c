/*
 * driver.c - runs a fuzz target without libFuzzer, for `make check`.
 *
 *   fuzz-X-seeds FILE|DIR...            every file through the target
 *   fuzz-X-seeds -m N FILE|DIR...       also N mutants of each, made by
 *                                       the target's custom mutator (the
 *                                       plan target) or by the driver's
 *                                       own, each run through it
 *
 * The seeds (t/fuzz/corpus/) and the crashes the long runs found stay
 * tested in every build, sanitizers included, with no clang needed. With
 * -m the driver prints how many mutants the plan reader got past its
 * header and payload checks: the mutator's reason to exist.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <zstd.h>

#include "plan.h"
#include "format.h"
#include "fuzz.h"

/* A stand-in for libFuzzer's mutator: flip, set, insert or erase a few
 * bytes, from one rand() stream the caller seeds. */
static unsigned driver_rand_state = 1;

static unsigned driver_rand(void)
{
	driver_rand_state = driver_rand_state * 1103515245u + 12345u;
	return driver_rand_state >> 8;
}

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max)
{
	unsigned edits = 1 + driver_rand() % 4;

	for (unsigned e = 0; e < edits; e++) {
		size_t at = size ? driver_rand() % size : 0;

		switch (driver_rand() % 4) {
		case 0:
			if (size)
				data[at] ^= (uint8_t)(1u << (driver_rand() % 8));
			break;
		case 1:
			if (size)
				data[at] = (uint8_t)driver_rand();
			break;
		case 2:
			if (size < max) {
				memmove(data + at + 1, data + at, size - at);
				data[at] = (uint8_t)driver_rand();
				size++;
			}
			break;
		default:
			if (size > 1) {
				memmove(data + at, data + at + 1, size - at - 1);
				size--;
			}
			break;
		}
	}
	return size;
}

/* The plan target's mutator; the script target has none. */
__attribute__((weak)) size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max,
                                                     unsigned int seed);

struct driver {
	unsigned long mutants;
	unsigned long files;
	unsigned long runs;
	unsigned long past_checks;   /* mutants the plan reader decompressed */
};

static int driver_read(const char *path, uint8_t **data, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL, *grown;
	size_t cap = 0, n = 0, got;

	if (f == NULL)
		return -1;
	do {
		if (n == cap) {
			cap = cap ? 2 * cap : 4096;
			if ((grown = realloc(buf, cap)) == NULL) {
				free(buf);
				fclose(f);
				return -1;
			}
			buf = grown;
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
	} while (got > 0);
	if (ferror(f)) {
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	*data = buf;
	*len = n;
	return 0;
}

/* Would the plan reader get past the header, the payload checksum and
 * zstd, to the sections? Checked here on the bytes, independently of the
 * reader. */
static int driver_past_checks(const uint8_t *data, size_t size)
{
	uint64_t payload, content;
	unsigned char *buf;
	size_t got;

	if (size < FMT_HEADER_SIZE || memcmp(data, FMT_MAGIC, FMT_MAGIC_SIZE) != 0 ||
	    fmt_get16(data + HDR_MAJOR) != PLAN_FORMAT_MAJOR ||
	    fmt_get32(data + HDR_CRC) != plan_crc32c(data, HDR_CRC))
		return 0;
	payload = fmt_get64(data + HDR_PAYLOAD_SIZE);
	content = fmt_get64(data + HDR_CONTENT_SIZE);
	if (payload != size - FMT_HEADER_SIZE || content == 0 || content > (UINT64_C(64) << 20) ||
	    fmt_get32(data + HDR_PAYLOAD_CRC) != plan_crc32c(data + FMT_HEADER_SIZE, payload))
		return 0;
	if ((buf = malloc((size_t)content)) == NULL)
		return 0;
	got = ZSTD_decompress(buf, (size_t)content, data + FMT_HEADER_SIZE, (size_t)payload);
	free(buf);
	return !ZSTD_isError(got) && got == content;
}

static int driver_file(struct driver *d, const char *path)
{
	uint8_t *data, *m;
	size_t len, max, n;

	if (driver_read(path, &data, &len) != 0) {
		fprintf(stderr, "fuzz driver: %s: %s\n", path, strerror(errno));
		return -1;
	}
	d->files++;
	d->runs++;
	LLVMFuzzerTestOneInput(data, len);
	if (d->mutants > 0) {
		max = 2 * len + 4096;
		if ((m = malloc(max)) == NULL) {
			free(data);
			return -1;
		}
		for (unsigned long i = 0; i < d->mutants; i++) {
			memcpy(m, data, len);
			driver_rand_state = (unsigned)(i * 2654435761u + len);
			d->runs++;
			if (LLVMFuzzerCustomMutator != NULL) {
				n = LLVMFuzzerCustomMutator(m, len, max, (unsigned)(i + 1));
				d->past_checks += (unsigned long)driver_past_checks(m, n);
			} else {
				n = LLVMFuzzerMutate(m, len, max);
			}
			LLVMFuzzerTestOneInput(m, n);
		}
		free(m);
	}
	free(data);
	return 0;
}

static int driver_path(struct driver *d, const char *path)
{
	struct dirent **names;
	struct stat st;
	char sub[4096];
	int n, rc = 0;

	if (stat(path, &st) != 0) {
		fprintf(stderr, "fuzz driver: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return driver_file(d, path);
	/* Sorted, so that runs repeat exactly. */
	if ((n = scandir(path, &names, NULL, alphasort)) < 0) {
		fprintf(stderr, "fuzz driver: %s: %s\n", path, strerror(errno));
		return -1;
	}
	for (int i = 0; i < n; i++) {
		if (names[i]->d_name[0] != '.' && rc == 0) {
			snprintf(sub, sizeof sub, "%s/%s", path, names[i]->d_name);
			rc = driver_path(d, sub);
		}
		free(names[i]);
	}
	free(names);
	return rc;
}

int main(int argc, char **argv)
{
	struct driver d = { 0 };
	int i = 1;

	if (i + 1 < argc && strcmp(argv[i], "-m") == 0) {
		d.mutants = strtoul(argv[i + 1], NULL, 10);
		i += 2;
	}
	if (i >= argc) {
		fprintf(stderr, "usage: %s [-m MUTANTS] FILE|DIR...\n", argv[0]);
		return 2;
	}
	for (; i < argc; i++)
		if (driver_path(&d, argv[i]) != 0)
			return 1;
	printf("files %lu runs %lu", d.files, d.runs);
	if (d.mutants > 0)
		printf(" mutants %lu past-checks %lu", d.files * d.mutants, d.past_checks);
	printf("\n");
	return 0;
}
