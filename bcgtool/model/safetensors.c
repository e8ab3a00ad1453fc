/*
 * safetensors.c - safetensors files and sharded checkpoints (see
 * safetensors.h). The JSON is parsed with jansson.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef HAVE_JANSSON
#include <jansson.h>
#endif

#include "model/safetensors.h"
#include "ops/numeric.h"
#include "plan.h"

static int st_fail(char *msg, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int st_fail(char *msg, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, len, fmt, ap);
	va_end(ap);
	return -1;
}

void st_convert(void *dst, int ddt, const void *src, int sdt, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		float v;
		switch (sdt) {
		case PLAN_DTYPE_F16: {
			uint16_t h;
			memcpy(&h, (const unsigned char *)src + 2 * i, 2);
			v = bcg_f16_to_f32(h);
			break;
		}
		case PLAN_DTYPE_BF16: {
			uint16_t h;
			memcpy(&h, (const unsigned char *)src + 2 * i, 2);
			v = bcg_bf16_to_f32(h);
			break;
		}
		default:
			memcpy(&v, (const unsigned char *)src + 4 * i, 4);
			break;
		}
		switch (ddt) {
		case PLAN_DTYPE_F16: {
			uint16_t h = bcg_f32_to_f16(v);
			memcpy((unsigned char *)dst + 2 * i, &h, 2);
			break;
		}
		case PLAN_DTYPE_BF16: {
			uint16_t h = bcg_f32_to_bf16(v);
			memcpy((unsigned char *)dst + 2 * i, &h, 2);
			break;
		}
		default:
			memcpy((unsigned char *)dst + 4 * i, &v, 4);
			break;
		}
	}
}

void st_close(struct st_file *f)
{
	if (f == NULL)
		return;
	if (f->map != NULL && f->size > 0 && !f->borrowed)
		munmap((void *)f->map, (size_t)f->size);
	if (f->fd >= 0)
		close(f->fd);
	for (uint32_t i = 0; i < f->ntensors; i++)
		free(f->tensors[i].name);
	free(f->tensors);
	free(f->path);
	free(f);
}

static int st_cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct st_tensor *)a)->name, ((const struct st_tensor *)b)->name);
}

const struct st_tensor *st_find(const struct st_file *f, const char *name)
{
	struct st_tensor key = { .name = (char *)name };

	return bsearch(&key, f->tensors, f->ntensors, sizeof key, st_cmp_name);
}

static int st_cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

#ifdef HAVE_JANSSON

static const struct {
	const char *name;
	unsigned    bytes;
	int         dtype;
} st_dtypes[] = {
	{ "F64", 8, 0 }, { "F32", 4, PLAN_DTYPE_F32 }, { "F16", 2, PLAN_DTYPE_F16 },
	{ "BF16", 2, PLAN_DTYPE_BF16 }, { "I64", 8, 0 }, { "I32", 4, 0 }, { "I16", 2, 0 },
	{ "I8", 1, 0 }, { "U64", 8, 0 }, { "U32", 4, 0 }, { "U16", 2, 0 }, { "U8", 1, 0 },
	{ "BOOL", 1, 0 }, { "F8_E4M3", 1, 0 }, { "F8_E5M2", 1, 0 },
};

/* One entry of the header: KEY's object V into T. */
static int st_parse_entry(const struct st_file *f, const char *key, json_t *v,
                          struct st_tensor *t, char *msg, size_t len)
{
	json_t *dt = json_object_get(v, "dtype"), *shape = json_object_get(v, "shape");
	json_t *off = json_object_get(v, "data_offsets");
	uint64_t data = f->size - f->data_start, need;
	const char *p = f->path;
	size_t k;

	if (!json_is_object(v))
		return st_fail(msg, len, "%s: tensor '%s': its entry is not a JSON object", p, key);
	if (!json_is_string(dt) || !json_is_array(shape) || !json_is_array(off))
		return st_fail(msg, len, "%s: tensor '%s': its entry needs a string 'dtype', an "
		               "array 'shape' and an array 'data_offsets'", p, key);
	for (k = 0; k < sizeof st_dtypes / sizeof st_dtypes[0]; k++)
		if (strcmp(json_string_value(dt), st_dtypes[k].name) == 0)
			break;
	if (k == sizeof st_dtypes / sizeof st_dtypes[0])
		return st_fail(msg, len, "%s: tensor '%s': unknown dtype '%.15s'", p, key,
		               json_string_value(dt));
	snprintf(t->dtype_name, sizeof t->dtype_name, "%s", st_dtypes[k].name);
	t->dtype = st_dtypes[k].dtype;
	t->elem_bytes = st_dtypes[k].bytes;
	if (json_array_size(shape) > ST_MAX_RANK)
		return st_fail(msg, len, "%s: tensor '%s': %zu axes, more than %d", p, key,
		               json_array_size(shape), ST_MAX_RANK);
	t->rank = (int)json_array_size(shape);
	t->numel = 1;
	for (int i = 0; i < t->rank; i++) {
		json_t *a = json_array_get(shape, (size_t)i);
		if (!json_is_integer(a) || json_integer_value(a) < 0)
			return st_fail(msg, len, "%s: tensor '%s': axis %d of its shape is not a "
			               "size", p, key, i);
		t->shape[i] = json_integer_value(a);
		if (t->shape[i] != 0 && t->numel > UINT64_MAX / 8 / (uint64_t)t->shape[i])
			return st_fail(msg, len, "%s: tensor '%s': its shape is too large", p, key);
		t->numel *= (uint64_t)t->shape[i];
	}
	if (json_array_size(off) != 2 || !json_is_integer(json_array_get(off, 0)) ||
	    !json_is_integer(json_array_get(off, 1)) ||
	    json_integer_value(json_array_get(off, 0)) < 0 ||
	    json_integer_value(json_array_get(off, 1)) < json_integer_value(json_array_get(off, 0)))
		return st_fail(msg, len, "%s: tensor '%s': data_offsets must be [begin, end] with "
		               "0 <= begin <= end", p, key);
	t->begin = (uint64_t)json_integer_value(json_array_get(off, 0));
	t->end = (uint64_t)json_integer_value(json_array_get(off, 1));
	if (t->end > data)
		return st_fail(msg, len, "%s: tensor '%s': its data [%llu, %llu) runs past the "
		               "%llu bytes of data the file holds (a truncated file?)", p, key,
		               (unsigned long long)t->begin, (unsigned long long)t->end,
		               (unsigned long long)data);
	need = t->numel * t->elem_bytes;
	if (t->end - t->begin != need)
		return st_fail(msg, len, "%s: tensor '%s': %llu bytes of data, but shape and "
		               "dtype %s need %llu", p, key,
		               (unsigned long long)(t->end - t->begin), t->dtype_name,
		               (unsigned long long)need);
	t->begin += f->data_start;
	t->end += f->data_start;
	return 0;
}

static int st_cmp_begin(const void *a, const void *b)
{
	const struct st_tensor *x = a, *y = b;

	return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : strcmp(x->name, y->name);
}

static int st_parse_header(struct st_file *f, char *msg, size_t len)
{
	uint64_t n;
	json_error_t jerr;
	json_t *root = NULL, *v;
	const char *key;
	int rc = -1;

	if (f->size < 8)
		return st_fail(msg, len, "%s: %llu bytes, too short for a safetensors header", f->path,
		               (unsigned long long)f->size);
	n = 0;
	for (int i = 7; i >= 0; i--)
		n = n << 8 | f->map[i];
	if (n > f->size - 8)
		return st_fail(msg, len, "%s: the header's stated size, %llu bytes, runs past the "
		               "end of the %llu-byte file", f->path, (unsigned long long)n,
		               (unsigned long long)f->size);
	if (n > ST_MAX_HEADER)
		return st_fail(msg, len, "%s: the header's stated size, %llu bytes, is over the "
		               "format's limit of 100 MiB", f->path, (unsigned long long)n);
	f->data_start = 8 + n;
	root = json_loadb((const char *)f->map + 8, (size_t)n, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL) {
		if (strstr(jerr.text, "unable to decode byte") != NULL)
			return st_fail(msg, len, "%s: the header is not valid UTF-8 (%s, at byte %d "
			               "of the header)", f->path, jerr.text, jerr.position);
		if (strstr(jerr.text, "expected near end of file") != NULL ||
		    strstr(jerr.text, "premature end of input") != NULL)
			return st_fail(msg, len, "%s: the header's JSON runs past its stated size of "
			               "%llu bytes", f->path, (unsigned long long)n);
		return st_fail(msg, len, "%s: the header is not valid JSON: %s (at byte %d of the "
		               "header)", f->path, jerr.text, jerr.position);
	}
	if (!json_is_object(root)) {
		st_fail(msg, len, "%s: the header is not a JSON object", f->path);
		goto out;
	}
	f->tensors = calloc(json_object_size(root) + 1, sizeof *f->tensors);
	if (f->tensors == NULL) {
		st_fail(msg, len, "out of memory");
		goto out;
	}
	json_object_foreach(root, key, v) {
		struct st_tensor *t = &f->tensors[f->ntensors];
		if (strcmp(key, "__metadata__") == 0)
			continue;
		if ((t->name = strdup(key)) == NULL) {
			st_fail(msg, len, "out of memory");
			goto out;
		}
		f->ntensors++;
		if (st_parse_entry(f, key, v, t, msg, len) != 0)
			goto out;
	}
	/* Overlaps: in order of their offsets, each tensor that takes bytes
	 * must start at or after the end of every one before it that does --
	 * the one that ends last (empty tensors take none, wherever they
	 * lie, and are no reference: one between two tensors that overlap
	 * must not hide the overlap). */
	qsort(f->tensors, f->ntensors, sizeof *f->tensors, st_cmp_begin);
	for (uint32_t i = 0, last = UINT32_MAX; i < f->ntensors; i++) {
		const struct st_tensor *b = &f->tensors[i];
		const struct st_tensor *a = last != UINT32_MAX ? &f->tensors[last] : NULL;
		if (b->end == b->begin)
			continue;
		if (a == NULL || b->end > a->end)
			last = i;
		if (a != NULL && a->end > b->begin) {
			st_fail(msg, len, "%s: tensors '%s' [%llu, %llu) and '%s' [%llu, %llu) overlap",
			        f->path, a->name, (unsigned long long)(a->begin - f->data_start),
			        (unsigned long long)(a->end - f->data_start), b->name,
			        (unsigned long long)(b->begin - f->data_start),
			        (unsigned long long)(b->end - f->data_start));
			goto out;
		}
	}
	qsort(f->tensors, f->ntensors, sizeof *f->tensors, st_cmp_name);
	rc = 0;
out:
	json_decref(root);
	return rc;
}

int st_open_memory(const char *name, const void *data, size_t size, struct st_file **out,
                   char *msg, size_t len)
{
	struct st_file *f;

	*out = NULL;
	if ((f = calloc(1, sizeof *f)) == NULL || (f->path = strdup(name)) == NULL) {
		free(f);
		return st_fail(msg, len, "out of memory");
	}
	f->fd = -1;
	f->borrowed = 1;
	f->map = data;
	f->size = size;
	if (st_parse_header(f, msg, len) != 0) {
		st_close(f);
		return -1;
	}
	*out = f;
	return 0;
}

int st_open(const char *path, struct st_file **out, char *msg, size_t len)
{
	struct st_file *f;
	struct stat sb;

	*out = NULL;
	if ((f = calloc(1, sizeof *f)) == NULL || (f->path = strdup(path)) == NULL) {
		free(f);
		return st_fail(msg, len, "out of memory");
	}
	f->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (f->fd < 0 || fstat(f->fd, &sb) != 0) {
		st_fail(msg, len, "%s: cannot open: %s", path, strerror(errno));
		goto fail;
	}
	if (!S_ISREG(sb.st_mode)) {
		st_fail(msg, len, "%s: not a regular file", path);
		goto fail;
	}
	f->size = (uint64_t)sb.st_size;
	if (f->size > 0) {
		void *m = mmap(NULL, (size_t)f->size, PROT_READ, MAP_PRIVATE, f->fd, 0);
		if (m == MAP_FAILED) {
			st_fail(msg, len, "%s: cannot map: %s", path, strerror(errno));
			goto fail;
		}
		f->map = m;
	}
	if (st_parse_header(f, msg, len) != 0)
		goto fail;
	*out = f;
	return 0;
fail:
	st_close(f);
	return -1;
}

/* The directory part of PATH with a trailing '/', or "". */
static char *st_dirname(const char *path)
{
	const char *slash = strrchr(path, '/');
	size_t n = slash ? (size_t)(slash - path) + 1 : 0;
	char *d = malloc(n + 1);

	if (d != NULL) {
		memcpy(d, path, n);
		d[n] = '\0';
	}
	return d;
}

static int st_open_index(struct st_checkpoint *ck, char *msg, size_t len)
{
	json_error_t jerr;
	json_t *root = json_load_file(ck->path, JSON_REJECT_DUPLICATES, &jerr), *map, *v;
	char *dir = NULL, **shard = NULL;
	const char *key;
	uint32_t nshard = 0;
	int rc = -1;

	if (root == NULL) {
		if (jerr.line < 1)
			return st_fail(msg, len, "%s: cannot read: %s", ck->path, jerr.text);
		return st_fail(msg, len, "%s:%d:%d: %s", ck->path, jerr.line, jerr.column, jerr.text);
	}
	map = json_object_get(root, "weight_map");
	if (!json_is_object(map)) {
		st_fail(msg, len, "%s: no object 'weight_map' (an index of safetensors shards has one)",
		        ck->path);
		goto out;
	}
	if ((dir = st_dirname(ck->path)) == NULL ||
	    (shard = calloc(json_object_size(map) + 1, sizeof *shard)) == NULL ||
	    (ck->map_name = calloc(json_object_size(map) + 1, sizeof *ck->map_name)) == NULL ||
	    (ck->map_file = calloc(json_object_size(map) + 1, sizeof *ck->map_file)) == NULL ||
	    (ck->files = calloc(json_object_size(map) + 1, sizeof *ck->files)) == NULL) {
		st_fail(msg, len, "out of memory");
		goto out;
	}
	json_object_foreach(map, key, v) {
		uint32_t k;
		if (!json_is_string(v) || strchr(json_string_value(v), '/') != NULL ||
		    json_string_value(v)[0] == '\0') {
			st_fail(msg, len, "%s: weight_map: the shard of tensor '%s' must be a file "
			        "name in the index's directory", ck->path, key);
			goto out;
		}
		for (k = 0; k < nshard; k++)
			if (strcmp(shard[k], json_string_value(v)) == 0)
				break;
		if (k == nshard) {
			char *sp;
			shard[nshard++] = (char *)json_string_value(v);
			if ((sp = malloc(strlen(dir) + strlen(shard[k]) + 1)) == NULL) {
				st_fail(msg, len, "out of memory");
				goto out;
			}
			strcpy(sp, dir);
			strcat(sp, shard[k]);
			rc = st_open(sp, &ck->files[ck->nfiles], msg, len);
			free(sp);
			if (rc != 0)
				goto out;
			rc = -1;
			ck->nfiles++;
		}
		if ((ck->map_name[ck->nmap] = strdup(key)) == NULL) {
			st_fail(msg, len, "out of memory");
			goto out;
		}
		ck->map_file[ck->nmap++] = k;
	}
	/* Sort names and their shards together. */
	{
		char **names = malloc((ck->nmap + 1) * sizeof *names);
		uint32_t *files = malloc((ck->nmap + 1) * sizeof *files);
		if (names == NULL || files == NULL) {
			free(names);
			free(files);
			st_fail(msg, len, "out of memory");
			goto out;
		}
		memcpy(names, ck->map_name, ck->nmap * sizeof *names);
		qsort(names, ck->nmap, sizeof *names, st_cmp_str);
		for (uint32_t i = 0; i < ck->nmap; i++)
			for (uint32_t j = 0; j < ck->nmap; j++)
				if (ck->map_name[j] == names[i]) {
					files[i] = ck->map_file[j];
					break;
				}
		free(ck->map_name);
		free(ck->map_file);
		ck->map_name = names;
		ck->map_file = files;
	}
	rc = 0;
out:
	free(shard);
	free(dir);
	json_decref(root);
	return rc;
}

#else /* !HAVE_JANSSON */

int st_open(const char *path, struct st_file **out, char *msg, size_t len)
{
	*out = NULL;
	return st_fail(msg, len, "%s: cannot read safetensors files: this bcgtool was built "
	               "without jansson", path);
}

int st_open_memory(const char *name, const void *data, size_t size, struct st_file **out,
                   char *msg, size_t len)
{
	(void)data;
	(void)size;
	return st_open(name, out, msg, len);
}

static int st_open_index(struct st_checkpoint *ck, char *msg, size_t len)
{
	return st_fail(msg, len, "%s: cannot read safetensors files: this bcgtool was built "
	               "without jansson", ck->path);
}

#endif /* HAVE_JANSSON */

int st_checkpoint_open(const char *path, struct st_checkpoint **out, char *msg, size_t len)
{
	struct st_checkpoint *ck = calloc(1, sizeof *ck);
	size_t n = strlen(path);

	*out = NULL;
	if (ck == NULL || (ck->path = strdup(path)) == NULL) {
		free(ck);
		return st_fail(msg, len, "out of memory");
	}
	if (n >= 5 && strcmp(path + n - 5, ".json") == 0) {
		if (st_open_index(ck, msg, len) != 0)
			goto fail;
	} else {
		if ((ck->files = calloc(1, sizeof *ck->files)) == NULL) {
			st_fail(msg, len, "out of memory");
			goto fail;
		}
		if (st_open(path, &ck->files[0], msg, len) != 0)
			goto fail;
		ck->nfiles = 1;
	}
	*out = ck;
	return 0;
fail:
	st_checkpoint_close(ck);
	return -1;
}

void st_checkpoint_close(struct st_checkpoint *ck)
{
	if (ck == NULL)
		return;
	for (uint32_t i = 0; i < ck->nfiles; i++)
		st_close(ck->files[i]);
	for (uint32_t i = 0; i < ck->nmap; i++)
		free(ck->map_name[i]);
	free(ck->map_name);
	free(ck->map_file);
	free(ck->files);
	free(ck->path);
	free(ck);
}

uint32_t st_checkpoint_count(const struct st_checkpoint *ck)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < ck->nfiles; i++)
		n += ck->files[i]->ntensors;
	return n;
}

int st_checkpoint_find(const struct st_checkpoint *ck, const char *name,
                       const struct st_file **file, const struct st_tensor **t,
                       char *msg, size_t len)
{
	const struct st_file *f = ck->nfiles > 0 ? ck->files[0] : NULL;

	*file = NULL;
	*t = NULL;
	if (ck->map_name != NULL) {
		char *const *hit = bsearch(&name, ck->map_name, ck->nmap, sizeof *ck->map_name, st_cmp_str);
		if (hit == NULL)
			return st_fail(msg, len, "%s: no tensor '%s' in the index", ck->path, name);
		f = ck->files[ck->map_file[hit - ck->map_name]];
	}
	if (f == NULL || (*t = st_find(f, name)) == NULL)
		return st_fail(msg, len, "%s: no tensor '%s'", f ? f->path : ck->path, name);
	*file = f;
	return 0;
}
