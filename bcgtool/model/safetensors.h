/*
 * safetensors.h - reading checkpoints in the safetensors format.
 *
 * A safetensors file is an 8-byte little-endian header size N, N bytes of
 * JSON (an object: per tensor its dtype, shape and [begin, end) offsets
 * into the data that follows; "__metadata__" holds strings), then the
 * data. A sharded checkpoint adds model.safetensors.index.json, whose
 * "weight_map" names the shard holding each tensor.
 *
 * Files are mapped, never read whole: a tensor's bytes are read where
 * they lie. Every check the format allows is made when a file opens
 * (header size within the file, JSON within the stated size, UTF-8
 * names, known dtypes, sizes matching shapes, offsets within the data and
 * not overlapping), so a tensor found later can be used as it is. Errors
 * are one sentence naming the file, and the tensor where one is at fault.
 *
 * Built without jansson, every open fails with "built without jansson".
 */
#ifndef BCG_MODEL_SAFETENSORS_H
#define BCG_MODEL_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#define ST_MAX_RANK 8

/* The header may take at most this many bytes (the format's own limit). */
#define ST_MAX_HEADER (UINT64_C(100) << 20)

struct st_tensor {
	char       *name;
	char        dtype_name[16];     /* as the file says: "BF16" */
	int         dtype;              /* enum plan_dtype for F32, F16, BF16; else 0 */
	unsigned    elem_bytes;
	int         rank;
	int64_t     shape[ST_MAX_RANK];
	uint64_t    numel;
	uint64_t    begin;              /* offsets in the file itself */
	uint64_t    end;
};

struct st_file {
	char             *path;
	int               fd;
	const unsigned char *map;
	uint64_t          size;
	uint64_t          data_start;   /* 8 + N */
	uint32_t          ntensors;
	struct st_tensor *tensors;      /* sorted by name */
	int               borrowed;     /* map is the caller's (st_open_memory) */
};

/* Open and check the safetensors file at PATH. */
int st_open(const char *path, struct st_file **out, char *msg, size_t len);
void st_close(struct st_file *f);

/* The same checks on SIZE bytes at DATA, which stay the caller's and must
 * outlive the result; NAME stands for the file in messages. */
int st_open_memory(const char *name, const void *data, size_t size, struct st_file **out,
                   char *msg, size_t len);

/* The tensor NAME of F, or NULL. */
const struct st_tensor *st_find(const struct st_file *f, const char *name);

/* A checkpoint: one safetensors file, or the shards an index file names. */
struct st_checkpoint {
	char            *path;          /* as opened: the file or the index */
	uint32_t         nfiles;
	struct st_file **files;
	uint32_t         nmap;          /* index files: name -> shard */
	char           **map_name;      /* sorted */
	uint32_t        *map_file;
};

/* Open PATH: a file ending in ".json" is an index of shards (resolved
 * against its directory), any other a safetensors file. */
int st_checkpoint_open(const char *path, struct st_checkpoint **out, char *msg, size_t len);
void st_checkpoint_close(struct st_checkpoint *ck);

/* Find tensor NAME; on failure a sentence naming the checkpoint and NAME. */
int st_checkpoint_find(const struct st_checkpoint *ck, const char *name,
                       const struct st_file **file, const struct st_tensor **t,
                       char *msg, size_t len);

/* Every tensor of CK, in file order then name order (for import). */
uint32_t st_checkpoint_count(const struct st_checkpoint *ck);

/* The bytes of T in F. */
static inline const void *st_data(const struct st_file *f, const struct st_tensor *t)
{
	return f->map + t->begin;
}

/* Convert N elements from SRC (plan dtype SDT) into DST (plan dtype DDT),
 * both f32, f16 or bf16: through f32, rounding to nearest even. */
void st_convert(void *dst, int ddt, const void *src, int sdt, uint64_t n);

#endif /* BCG_MODEL_SAFETENSORS_H */
