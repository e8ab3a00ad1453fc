/*
 * fuzz-hf-config.c - a libFuzzer target for bcgtool import's reading of a
 * Hugging Face config.json (bcgtool/model/hf-import.c): the input is the
 * config, beside a small fixed checkpoint, and hf_import runs as the
 * command runs it.
 *
 * A refusal must say why and write no script. An import must write one
 * that starts as scripts start and carries the rope type it reports; the
 * model it describes must have what every later step divides by.
 *
 * The checkpoint holds lm_head.weight and the first layer's q_norm
 * weight, so that untied models and Qwen3 reach the script writer. It and
 * the config live in one directory (under /dev/shm where it exists) made
 * on the first call and removed at exit.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/hf-import.h"
#include "fuzz.h"

static char fuzz_dir[64];
static char fuzz_config[96];

static void fuzz_hf_cleanup(void)
{
	char path[128];

	unlink(fuzz_config);
	snprintf(path, sizeof path, "%s/model.safetensors", fuzz_dir);
	unlink(path);
	rmdir(fuzz_dir);
}

/* The directory and its checkpoint: two f32 tensors of one element. */
static void fuzz_hf_setup(void)
{
	static const char header[] =
		"{\"lm_head.weight\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
		"\"model.layers.0.self_attn.q_norm.weight\":{\"dtype\":\"F32\",\"shape\":[1],"
		"\"data_offsets\":[4,8]}}";
	char path[128];
	uint64_t n = sizeof header - 1;
	unsigned char len[8];
	FILE *f;

	/* memory-backed where there is one: a file a run */
	snprintf(fuzz_dir, sizeof fuzz_dir, "/dev/shm/bcg-fuzz-hf-XXXXXX");
	if (mkdtemp(fuzz_dir) == NULL) {
		snprintf(fuzz_dir, sizeof fuzz_dir, "/tmp/bcg-fuzz-hf-XXXXXX");
		if (mkdtemp(fuzz_dir) == NULL)
			abort();
	}
	snprintf(fuzz_config, sizeof fuzz_config, "%s/config.json", fuzz_dir);
	snprintf(path, sizeof path, "%s/model.safetensors", fuzz_dir);
	for (int i = 0; i < 8; i++)
		len[i] = (unsigned char)(n >> (8 * i));
	if ((f = fopen(path, "wb")) == NULL)
		abort();
	if (fwrite(len, 1, 8, f) != 8 || fwrite(header, 1, n, f) != n ||
	    fwrite("\0\0\x80\x3f\0\0\x80\x3f", 1, 8, f) != 8 || fclose(f) != 0)
		abort();
	atexit(fuzz_hf_cleanup);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int64_t tokens[] = { 1, 8 };
	struct hf_import_opts o = { .tokens = tokens, .ntokens = 2 };
	struct hf_model m;
	char msg[512] = "", *text = NULL;
	FILE *f;

	if (fuzz_dir[0] == '\0')
		fuzz_hf_setup();
	if ((f = fopen(fuzz_config, "wb")) == NULL)
		abort();
	if ((size > 0 && fwrite(data, 1, size, f) != size) || fclose(f) != 0)
		abort();
	if (hf_import(fuzz_dir, &o, &text, &m, msg, sizeof msg) != 0) {
		if (text != NULL || msg[0] == '\0')
			abort();
		return 0;
	}
	if (text == NULL || strstr(text, "\nbcg: 1\n") == NULL)
		abort();
	if (m.layers < 1 || m.heads < 1 || m.kv_heads < 1 || m.head_dim < 2 ||
	    m.heads % m.kv_heads != 0 || m.positions < tokens[1] || m.vocab < 1)
		abort();
	if (strcmp(m.rope_type, "default") != 0) {
		char want[48];
		snprintf(want, sizeof want, "rope_type: %s,", m.rope_type);
		if (strstr(text, want) == NULL)
			abort();
	}
	free(text);
	return 0;
}
