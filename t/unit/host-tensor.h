/*
 * host-tensor.h - the host kernel tests' tensors (t/unit/host-ops.c,
 * host-moe.c, host-paged.c): dtype names and sizes, tensors allocated at
 * their exact size (so that the sanitizer builds catch any access outside
 * them), and element access as double. Each test keeps its own bounds
 * and fills: they differ on purpose.
 *
 * Static inline functions (a test may leave some unused); include after
 * numeric.h, host.h and tap.h.
 */
#ifndef BCG_T_UNIT_HOST_TENSOR_H
#define BCG_T_UNIT_HOST_TENSOR_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int float_dtypes[] = { PLAN_DTYPE_F32, PLAN_DTYPE_F16, PLAN_DTYPE_BF16 };
#define NFLOAT 3

static inline const char *dt_name(int dtype)
{
	switch (dtype) {
	case PLAN_DTYPE_F32: return "f32";
	case PLAN_DTYPE_F16: return "f16";
	case PLAN_DTYPE_BF16: return "bf16";
	case PLAN_DTYPE_I32: return "i32";
	}
	return "?";
}

static inline size_t dt_size(int dtype)
{
	return dtype == PLAN_DTYPE_F16 || dtype == PLAN_DTYPE_BF16 ? 2 : 4;
}

static inline void *xalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p) {
		printf("Bail out! out of memory\n");
		exit(99);
	}
	return p;
}

/* A zeroed tensor of DTYPE with RANK dims. */
static inline struct op_tensor tensor_new(int dtype, int rank, const int64_t *dims)
{
	struct op_tensor t = { .dtype = dtype, .rank = rank };
	int64_t n = 1;

	for (int d = 0; d < rank; d++) {
		t.dim[d] = dims[d];
		n *= dims[d];
	}
	t.data = xalloc((size_t)n * dt_size(dtype));
	memset(t.data, 0, (size_t)n * dt_size(dtype));
	return t;
}

#define T1(dt, a)       tensor_new(dt, 1, (const int64_t[]){ a })
#define T2(dt, a, b)    tensor_new(dt, 2, (const int64_t[]){ a, b })
#define T3(dt, a, b, c) tensor_new(dt, 3, (const int64_t[]){ a, b, c })

static inline int64_t numel(const struct op_tensor *t)
{
	int64_t n = 1;
	for (int d = 0; d < t->rank; d++)
		n *= t->dim[d];
	return n;
}

/* Element I as stored, exactly, in double. */
static inline double at(const struct op_tensor *t, int64_t i)
{
	switch (t->dtype) {
	case PLAN_DTYPE_F32: return ((const float *)t->data)[i];
	case PLAN_DTYPE_F16: return bcg_f16_to_f32(((const uint16_t *)t->data)[i]);
	case PLAN_DTYPE_BF16: return bcg_bf16_to_f32(((const uint16_t *)t->data)[i]);
	case PLAN_DTYPE_I32: return ((const int32_t *)t->data)[i];
	}
	return NAN;
}

/* Store V (rounded to the dtype) at I. */
static inline void set(const struct op_tensor *t, int64_t i, double v)
{
	switch (t->dtype) {
	case PLAN_DTYPE_F32: ((float *)t->data)[i] = (float)v; break;
	case PLAN_DTYPE_F16: ((uint16_t *)t->data)[i] = bcg_f32_to_f16((float)v); break;
	case PLAN_DTYPE_BF16: ((uint16_t *)t->data)[i] = bcg_f32_to_bf16((float)v); break;
	case PLAN_DTYPE_I32: ((int32_t *)t->data)[i] = (int32_t)v; break;
	}
}

#endif
