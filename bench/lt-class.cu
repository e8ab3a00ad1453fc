/*
 * bench/lt-class.cu - what choosing cuBLASLt's algorithm per token class
 * costs against choosing it per token count, on the products of a
 * Llama-3.2-1B-shaped step (bf16, weights [out, in]: q|k|v 3072 x 2048,
 * o 2048 x 2048, gate|up 16384 x 2048, down 2048 x 8192), at the capture
 * sizes of 40 to 512 tokens that vLLM's default list has.
 *
 * bcgtool's "cublas" implementation (bcgtool/ops/cuda-matmul.cu) asks the
 * heuristic once per class of token counts, so that the sizes of a class
 * run one kernel and their graphs share an executable. Which algorithm a
 * class should run is what this measures. Rules, for a token count M:
 *
 *   exact   the heuristic's first algorithm for M itself (no sharing)
 *   top     for the top of M's class (classes 24, 32, 48, 64, 96, 128,
 *           192, 256, 384, 512: 2^k and 3 * 2^(k-1))
 *   top64   the same, classes multiples of 64 above 128
 *   bottom  for the bottom of M's class (the class before's top + 1)
 *   both    the first of the heuristic's 16 for the top that is also
 *           among its 16 for the bottom (else top's first)
 *
 * Build and run on the GPU machine (it is not part of the build):
 *   nvcc -O2 -arch=sm_90 -o /tmp/lt-class bench/lt-class.cu -lcublasLt
 *   /tmp/lt-class [REPS]
 * Per shape and M it prints each rule's time a launch (microseconds, the
 * median of 5 rounds of REPS back-to-back launches) and the algorithm
 * (id/tile/split-K/stages); then, per M, the four products' sum under
 * each rule over exact's.
 */
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x)                                                                          \
	do {                                                                           \
		cudaError_t e_ = (x);                                                  \
		if (e_ != cudaSuccess) {                                               \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,             \
			        cudaGetErrorString(e_));                                \
			exit(1);                                                       \
		}                                                                      \
	} while (0)
#define LK(x)                                                                          \
	do {                                                                           \
		cublasStatus_t s_ = (x);                                               \
		if (s_ != CUBLAS_STATUS_SUCCESS) {                                     \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,             \
			        cublasLtGetStatusString(s_));                           \
			exit(1);                                                       \
		}                                                                      \
	} while (0)

enum { RULES = 5 };
static const char *const rule_names[RULES] = { "exact", "top", "top64", "bottom", "both" };

static long class_top(long m, int by64)
{
	if (m <= 16)
		return m;
	if (by64 && m > 128)
		return (m + 63) / 64 * 64;
	long p = 16;
	while (p < m) {
		if (p + p / 2 >= m)
			return p + p / 2;
		p *= 2;
	}
	return p;
}

static long class_bottom(long m)
{
	long top = class_top(m, 0), lo = m;
	while (lo > 1 && class_top(lo - 1, 0) == top)
		lo--;
	return lo;
}

struct ctx {
	cublasLtHandle_t h;
	cublasLtMatmulDesc_t desc;
	void *ws;
	size_t ws_bytes;
};

/* Layouts of out[M,N] = a[M,K] @ b[N,K]^T as cuda-matmul.cu makes them. */
static void layouts(long N, long K, long M, cublasLtMatrixLayout_t l[3])
{
	LK(cublasLtMatrixLayoutCreate(&l[0], CUDA_R_16BF, K, N, K));
	LK(cublasLtMatrixLayoutCreate(&l[1], CUDA_R_16BF, K, M, K));
	LK(cublasLtMatrixLayoutCreate(&l[2], CUDA_R_16BF, N, M, N));
}

static void free_layouts(cublasLtMatrixLayout_t l[3])
{
	for (int i = 0; i < 3; i++)
		cublasLtMatrixLayoutDestroy(l[i]);
}

static int heuristic(ctx &c, long N, long K, long M, int want,
                     cublasLtMatmulHeuristicResult_t *res)
{
	cublasLtMatrixLayout_t l[3];
	cublasLtMatmulPreference_t pref;
	uint64_t ws = c.ws_bytes;
	int found = 0;

	layouts(N, K, M, l);
	LK(cublasLtMatmulPreferenceCreate(&pref));
	LK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
	                                        sizeof ws));
	LK(cublasLtMatmulAlgoGetHeuristic(c.h, c.desc, l[0], l[1], l[2], l[2], pref, want, res,
	                                  &found));
	cublasLtMatmulPreferenceDestroy(pref);
	free_layouts(l);
	return found;
}

static void describe(const cublasLtMatmulAlgo_t *a, char *buf, size_t n)
{
	uint64_t v[4] = { 0, 0, 0, 0 };
	size_t w;
	cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_ID, &v[0], sizeof v[0], &w);
	cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_TILE_ID, &v[1], sizeof v[1], &w);
	cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &v[2], sizeof v[2],
	                                     &w);
	cublasLtMatmulAlgoConfigGetAttribute(a, CUBLASLT_ALGO_CONFIG_STAGES_ID, &v[3], sizeof v[3],
	                                     &w);
	snprintf(buf, n, "%llu/%llu/%llu/%llu", (unsigned long long)v[0], (unsigned long long)v[1],
	         (unsigned long long)(uint32_t)v[2], (unsigned long long)v[3]);
}

/* Microseconds a launch of ALGO at M, or -1 when it cannot run M. */
static double time_algo(ctx &c, long N, long K, long M, const cublasLtMatmulAlgo_t *algo,
                        const void *a, const void *b, void *out, int reps, cudaStream_t s)
{
	cublasLtMatrixLayout_t l[3];
	cublasLtMatmulHeuristicResult_t chk;
	const float alpha = 1.0f, beta = 0.0f;
	cudaEvent_t e0, e1;
	std::vector<double> t;

	layouts(N, K, M, l);
	if (cublasLtMatmulAlgoCheck(c.h, c.desc, l[0], l[1], l[2], l[2], algo, &chk) !=
	        CUBLAS_STATUS_SUCCESS ||
	    chk.workspaceSize > c.ws_bytes) {
		free_layouts(l);
		return -1;
	}
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	for (int r = 0; r < 6; r++) {
		CK(cudaEventRecord(e0, s));
		for (int i = 0; i < reps; i++)
			LK(cublasLtMatmul(c.h, c.desc, &alpha, b, l[0], a, l[1], &beta, out, l[2], out,
			                  l[2], algo, c.ws, c.ws_bytes, s));
		CK(cudaEventRecord(e1, s));
		CK(cudaEventSynchronize(e1));
		float ms;
		CK(cudaEventElapsedTime(&ms, e0, e1));
		if (r > 0) /* the first round warms up */
			t.push_back(1e3 * ms / reps);
	}
	CK(cudaEventDestroy(e0));
	CK(cudaEventDestroy(e1));
	free_layouts(l);
	std::sort(t.begin(), t.end());
	return t[t.size() / 2];
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		long N, K;
	} shapes[] = {
		{ "qkv", 3072, 2048 }, { "o", 2048, 2048 }, { "gate_up", 16384, 2048 },
		{ "down", 2048, 8192 },
	};
	const int nshapes = 4, reps = argc > 1 ? atoi(argv[1]) : 20;
	std::vector<long> ms;
	for (long m = 40; m <= 248; m += 8)
		ms.push_back(m);
	for (long m = 256; m <= 512; m += 16)
		ms.push_back(m);

	ctx c;
	cudaStream_t s;
	cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
	CK(cudaStreamCreate(&s));
	LK(cublasLtCreate(&c.h));
	LK(cublasLtMatmulDescCreate(&c.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
	LK(cublasLtMatmulDescSetAttribute(c.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
	LK(cublasLtMatmulDescSetAttribute(c.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
	c.ws_bytes = 32u << 20;
	CK(cudaMalloc(&c.ws, c.ws_bytes));
	void *a, *b, *out;
	CK(cudaMalloc(&a, 512 * 8192 * 2));
	CK(cudaMalloc(&b, 16384L * 8192 * 2));
	CK(cudaMalloc(&out, 512 * 16384 * 2));
	CK(cudaMemset(a, 0x3c, 512 * 8192 * 2)); /* small bf16 values, no NaN */
	CK(cudaMemset(b, 0x3c, 16384L * 8192 * 2));

	std::vector<std::vector<double>> sum(ms.size(), std::vector<double>(RULES, 0.0));
	for (int si = 0; si < nshapes; si++) {
		long N = shapes[si].N, K = shapes[si].K;
		printf("%s %ld x %ld\n", shapes[si].name, N, K);
		for (size_t mi = 0; mi < ms.size(); mi++) {
			long M = ms[mi];
			long at[RULES] = { M, class_top(M, 0), class_top(M, 1), class_bottom(M),
			                   class_top(M, 0) };
			printf("  M %3ld", M);
			for (int r = 0; r < RULES; r++) {
				cublasLtMatmulHeuristicResult_t res[16], lo[16];
				cublasLtMatmulAlgo_t algo;
				int n = heuristic(c, N, K, at[r], r == 4 ? 16 : 1, res);
				if (n < 1) {
					printf("  %s none", rule_names[r]);
					continue;
				}
				algo = res[0].algo;
				if (r == 4) {
					int nl = heuristic(c, N, K, class_bottom(M), 16, lo);
					int done = 0;
					for (int i = 0; i < n && !done; i++)
						for (int j = 0; j < nl && !done; j++)
							if (memcmp(&res[i].algo, &lo[j].algo, sizeof algo) == 0) {
								algo = res[i].algo;
								done = 1;
							}
				}
				double us = time_algo(c, N, K, M, &algo, a, b, out, reps, s);
				char d[64];
				describe(&algo, d, sizeof d);
				printf("  %s(%ld) %.2f %s", rule_names[r], at[r], us, d);
				sum[mi][r] += us;
			}
			printf("\n");
		}
	}
	printf("sum of the four products, each rule over exact:\n");
	for (size_t mi = 0; mi < ms.size(); mi++) {
		printf("  M %3ld exact %.1f us", ms[mi], sum[mi][0]);
		for (int r = 1; r < RULES; r++)
			printf("  %s %.3f", rule_names[r], sum[mi][r] / sum[mi][0]);
		printf("\n");
	}
	return 0;
}
