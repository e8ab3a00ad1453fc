/*
 * cmd-import.c - bcgtool import: an op script for a Hugging Face model.
 *
 * Reads MODEL_DIR's config.json and checkpoint (model/hf-import.h),
 * writes the script, and loads it back as validate would before writing
 * it: a script import writes always validates. -o writes it atomically
 * (util.h: a temporary file in the same directory, renamed over SCRIPT);
 * without -o it goes to stdout. The checkpoint is named relative to the script's
 * directory when the script is written into the model's directory, else
 * by its absolute path.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"
#include "model/hf-import.h"
#include "script/script.h"
#include "util.h"

static int cmd_import_exec(int argc, char **argv);

const struct cmd_entry cmd_import_entry = {
	.name = "import",
	.usage = "[--tokens LIST] [--positions S] [--dtype D] [-o SCRIPT] MODEL_DIR",
	.summary = "write an op script for a Hugging Face model directory",
	.options =
		"  -t, --tokens LIST  the capture sizes, as 1,8,32 (default); a prompt runs\n"
		"                     on the smallest size that holds it\n"
		"  -s, --positions S  cache positions (default: max_position_embeddings,\n"
		"                     at most 2048)\n"
		"  -d, --dtype D      f32, f16 or bf16 (default: the config's dtype)\n"
		"  -o, --output SCRIPT\n"
		"                     write the script there (default: stdout)\n"
		"  -h, --help         show this help\n",
	.exec = cmd_import_exec,
};

static int import_parse_tokens(const char *s, int64_t *out, uint32_t *n)
{
	char *end;

	*n = 0;
	while (*s != '\0') {
		long long v;
		errno = 0;
		v = strtoll(s, &end, 10);
		if (end == s || errno != 0 || v < 1 || v > 65536 || (*end != ',' && *end != '\0') ||
		    *n == SCRIPT_MAX_SIZES || (*n > 0 && v <= out[*n - 1]))
			return -1;
		out[(*n)++] = v;
		s = *end == ',' ? end + 1 : end;
	}
	return *n > 0 ? 0 : -1;
}

/* How the script names the checkpoint CK: its base name when the script
 * goes into the checkpoint's directory, else its absolute path. */
static char *import_weights_name(const char *ck, const char *output)
{
	char real_ck[PATH_MAX], real_out[PATH_MAX], dir[PATH_MAX];
	const char *slash;

	if (realpath(ck, real_ck) == NULL)
		return xstrdup(ck);
	slash = strrchr(real_ck, '/');
	if (output != NULL) {
		const char *os = strrchr(output, '/');
		snprintf(dir, sizeof dir, "%.*s", os ? (int)(os - output) : 1, os ? output : ".");
		if (dir[0] == '\0')
			snprintf(dir, sizeof dir, "/");
		if (realpath(dir, real_out) != NULL && slash != NULL &&
		    strlen(real_out) == (size_t)(slash - real_ck) &&
		    strncmp(real_out, real_ck, (size_t)(slash - real_ck)) == 0)
			return xstrdup(slash + 1);
	}
	return xstrdup(real_ck);
}

static int import_write(const char *path, const char *text)
{
	struct bcg_output out;

	if (bcg_output_open(&out, path) != 0 || bcg_output_commit(&out, text, strlen(text)) != 0)
		return BCG_EXIT_RUNTIME;
	return BCG_EXIT_OK;
}

static int cmd_import_exec(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "tokens", required_argument, NULL, 't' },
		{ "positions", required_argument, NULL, 's' },
		{ "dtype", required_argument, NULL, 'd' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const struct cmd_entry *self = &cmd_import_entry;
	int64_t tokens[SCRIPT_MAX_SIZES] = { 1, 8, 32 };
	struct hf_import_opts o = { .tokens = tokens, .ntokens = 3 };
	const char *output = NULL;
	char msg[1024], *text = NULL, *ck = NULL;
	struct hf_model m;
	struct script *s = NULL;
	struct script_error serr;
	struct stat st;
	long long v;
	int c, rc;

	while ((c = cmd_getopt(self, argc, argv, "t:s:d:o:h", longopts)) != -1) {
		switch (c) {
		case 't':
			if (import_parse_tokens(optarg, tokens, &o.ntokens) != 0)
				return cmd_usage_error(self, "--tokens takes ascending sizes from 1 to "
				                       "65536, as 1,8,32, not '%s'", optarg);
			break;
		case 's':
			if (cmd_parse_int(self, "--positions", optarg, 1, 1 << 24, &v) != 0)
				return BCG_EXIT_USAGE;
			o.positions = v;
			break;
		case 'd':
			o.dtype = plan_dtype_from_name(optarg);
			if (o.dtype == 0 || o.dtype == PLAN_DTYPE_I32)
				return cmd_usage_error(self, "--dtype takes f32, f16 or bf16, not '%s'",
				                       optarg);
			break;
		case 'o': output = optarg; break;
		case CMD_HELP: return BCG_EXIT_OK;
		default: return BCG_EXIT_USAGE;
		}
	}
	if (optind + 1 != argc)
		return cmd_usage_error(self, optind == argc ? "no model directory given"
		                                            : "one model directory only");
	if (stat(argv[optind], &st) != 0) {
		bcg_error("%s: cannot read: %s", argv[optind], strerror(errno));
		return BCG_EXIT_USAGE;
	}
	if (!S_ISDIR(st.st_mode)) {
		bcg_error("%s: not a directory: import reads a model directory (config.json and "
		          "model.safetensors)", argv[optind]);
		return BCG_EXIT_USAGE;
	}
	if ((ck = hf_checkpoint_path(argv[optind])) == NULL) {
		bcg_error("out of memory");
		return BCG_EXIT_RUNTIME;
	}
	o.weights = import_weights_name(ck, output);
	if (strpbrk(o.weights, "\"\\\n") != NULL) {
		bcg_error("%s: a path holding '\"', '\\' or a newline cannot go into a script", ck);
		rc = BCG_EXIT_USAGE;
		goto out;
	}
	if (hf_import(argv[optind], &o, &text, &m, msg, sizeof msg) != 0) {
		bcg_error("%s", msg);
		rc = BCG_EXIT_USAGE;
		goto out;
	}
	/* Load it as validate would: the weights are found and their shapes
	 * checked, relative to where the script will be. */
	if (script_load_memory(output ? output : "-", text, strlen(text), &s, &serr) != 0) {
		bcg_error("the script made for %s does not load: %u:%u: %s", argv[optind], serr.line,
		          serr.col, serr.message);
		rc = BCG_EXIT_USAGE;
		goto out;
	}
	if (output == NULL) {
		fputs(text, stdout);
		rc = fflush(stdout) == 0 ? BCG_EXIT_OK : BCG_EXIT_RUNTIME;
	} else {
		rc = import_write(output, text);
	}
	if (rc == BCG_EXIT_OK && output != NULL) {
		char experts[64] = "";
		if (m.experts > 0)
			snprintf(experts, sizeof experts, ", %lld experts, %lld a token",
			         (long long)m.experts, (long long)m.top_k);
		bcg_note("%s: %s, %lld layers, hidden %lld, %lld/%lld heads of "
		        "%lld, vocabulary %lld, %s%s%s%s%s%s%s", output, m.arch, (long long)m.layers,
		        (long long)m.hidden, (long long)m.heads, (long long)m.kv_heads,
		        (long long)m.head_dim, (long long)m.vocab, plan_dtype_name(m.dtype),
		        m.tied ? ", tied embeddings" : "", m.qkv_bias ? ", q/k/v biases" : "",
		        m.qk_norm ? ", q/k norms" : "",
		        strcmp(m.rope_type, "default") != 0 ? ", rope " : "",
		        strcmp(m.rope_type, "default") != 0 ? m.rope_type : "", experts);
	}
out:
	script_free(s);
	free(text);
	free((char *)o.weights);
	free(ck);
	return rc;
}
