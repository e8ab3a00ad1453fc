/*
 * fuzz-plan.c - a libFuzzer target for the plan reader.
 *
 * The input is a plan file. A file the reader accepts must also survive
 * everything a reader of the model does: validation, the JSON and DOT
 * dumps, a diff with itself, and a write. The written bytes must read back
 * and write again to the same bytes (the writer's promise that the same
 * plan always gives the same bytes), and a diff of the two must be empty.
 *
 * Random bytes rarely pass the header and payload checksums, so the custom
 * mutator works on the content inside them: it decompresses the payload,
 * lets libFuzzer mutate the content, compresses it again and rewrites the
 * header's sizes and checksums. One mutation in eight mutates the file's
 * raw bytes instead, so that the header checks are fuzzed too.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "plan.h"
#include "format.h"
#include "fuzz.h"

/* Small enough that a mutated count cannot exhaust the fuzzer's memory. */
#define FUZZ_PLAN_MAX_BYTES   (UINT64_C(4) << 20)
#define FUZZ_PLAN_MAX_RECORDS (UINT32_C(1) << 16)

static FILE *fuzz_null(void)
{
	static FILE *f;

	if (f == NULL && (f = fopen("/dev/null", "w")) == NULL)
		abort();
	return f;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct plan_limits lim;
	struct plan_diag diag;
	struct plan_diff *d;
	plan_t *plan = NULL, *again = NULL;
	void *w1 = NULL, *w2 = NULL;
	size_t n1 = 0, n2 = 0;

	plan_limits_default(&lim);
	lim.max_file_bytes = FUZZ_PLAN_MAX_BYTES;
	lim.max_content_bytes = FUZZ_PLAN_MAX_BYTES;
	lim.max_records = FUZZ_PLAN_MAX_RECORDS;
	if (plan_read_memory(data, size, &lim, &plan, &diag) != PLAN_OK) {
		/* A failure names itself and leaves nothing behind. */
		if (plan != NULL || diag.code == PLAN_OK || diag.message[0] == '\0')
			abort();
		return 0;
	}
	if (plan_validate(plan, &diag) != PLAN_OK)
		abort();
	if (plan_dump_json(plan, fuzz_null(), NULL, &diag) != PLAN_OK ||
	    plan_dump_dot(plan, fuzz_null(), NULL, &diag) != PLAN_OK)
		abort();
	if ((d = plan_diff(plan, plan, 0)) != NULL) {
		if (plan_diff_count(d) != 0)
			abort();
		plan_diff_free(d);
	}

	/* Write, read back, write again: the same bytes. */
	if (plan_write_memory(plan, &w1, &n1, &diag) != PLAN_OK) {
		if (diag.code != PLAN_ERR_NOMEM)
			abort();
		goto out;
	}
	if (plan_read_memory(w1, n1, &lim, &again, &diag) != PLAN_OK) {
		/* Written content can grow past the fuzzing limit, never past
		 * the format. */
		if (diag.code != PLAN_ERR_LIMIT && diag.code != PLAN_ERR_NOMEM)
			abort();
		goto out;
	}
	if (plan_write_memory(again, &w2, &n2, &diag) != PLAN_OK)
		goto out;
	if (n1 != n2 || memcmp(w1, w2, n1) != 0)
		abort();
	if ((d = plan_diff(plan, again, 0)) != NULL) {
		if (plan_diff_count(d) != 0)
			abort();
		plan_diff_free(d);
	}
out:
	free(w1);
	free(w2);
	plan_free(again);
	plan_free(plan);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* The mutator.                                                            */

/* A seed's content, decompressed; NULL when DATA is not a plan whose
 * header and payload are whole. */
static unsigned char *fuzz_plan_content(const uint8_t *data, size_t size, size_t *len)
{
	unsigned long long fcs;
	uint64_t payload, content;
	unsigned char *buf;
	size_t got;

	if (size < FMT_HEADER_SIZE || memcmp(data, FMT_MAGIC, FMT_MAGIC_SIZE) != 0)
		return NULL;
	payload = fmt_get64(data + HDR_PAYLOAD_SIZE);
	content = fmt_get64(data + HDR_CONTENT_SIZE);
	if (payload != size - FMT_HEADER_SIZE || content > FUZZ_PLAN_MAX_BYTES)
		return NULL;
	fcs = ZSTD_getFrameContentSize(data + FMT_HEADER_SIZE, (size_t)payload);
	if (fcs != content)
		return NULL;
	if ((buf = malloc(content ? (size_t)content : 1)) == NULL)
		return NULL;
	got = ZSTD_decompress(buf, (size_t)content, data + FMT_HEADER_SIZE, (size_t)payload);
	if (ZSTD_isError(got) || got != content) {
		free(buf);
		return NULL;
	}
	*len = got;
	return buf;
}

size_t fuzz_plan_pack(const unsigned char *content, size_t len, unsigned major,
                      unsigned minor, uint8_t *out, size_t max)
{
	ZSTD_CCtx *cctx;
	unsigned char *frame;
	size_t n, bound = ZSTD_compressBound(len);

	if (max < FMT_HEADER_SIZE || (frame = malloc(bound)) == NULL)
		return 0;
	if ((cctx = ZSTD_createCCtx()) == NULL) {
		free(frame);
		return 0;
	}
	/* The writer's parameters: one frame, content size and checksum. */
	if (ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, 1)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 1)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_dictIDFlag, 0)))
		n = 0;
	else
		n = ZSTD_compress2(cctx, frame, bound, content, len);
	ZSTD_freeCCtx(cctx);
	/* OUT is left alone unless the whole file fits. */
	if (n == 0 || ZSTD_isError(n) || n > max - FMT_HEADER_SIZE) {
		free(frame);
		return 0;
	}
	memset(out, 0, FMT_HEADER_SIZE);
	memcpy(out + HDR_MAGIC, FMT_MAGIC, FMT_MAGIC_SIZE);
	fmt_put16(out + HDR_MAJOR, (uint16_t)major);
	fmt_put16(out + HDR_MINOR, (uint16_t)minor);
	fmt_put32(out + HDR_HEADER_SIZE, FMT_HEADER_SIZE);
	memcpy(out + FMT_HEADER_SIZE, frame, n);
	free(frame);
	fmt_put32(out + HDR_PAYLOAD_CRC, plan_crc32c(out + FMT_HEADER_SIZE, n));
	fmt_put64(out + HDR_PAYLOAD_SIZE, n);
	fmt_put64(out + HDR_CONTENT_SIZE, len);
	fmt_put32(out + HDR_CRC, plan_crc32c(out, HDR_CRC));
	return FMT_HEADER_SIZE + n;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned int seed)
{
	unsigned char *content, *grown;
	size_t len, cap, n;
	unsigned major, minor;

	if (seed % 8 == 0 || (content = fuzz_plan_content(data, size, &len)) == NULL)
		return LLVMFuzzerMutate(data, size, max);
	major = fmt_get16(data + HDR_MAJOR);
	minor = fmt_get16(data + HDR_MINOR);
	/* Room for the content to grow a little. */
	cap = len + len / 8 + 64;
	if ((grown = realloc(content, cap)) == NULL) {
		free(content);
		return LLVMFuzzerMutate(data, size, max);
	}
	content = grown;
	len = LLVMFuzzerMutate(content, len, cap);
	n = fuzz_plan_pack(content, len, major, minor, data, max);
	free(content);
	if (n == 0)
		return LLVMFuzzerMutate(data, size, max);
	return n;
}
