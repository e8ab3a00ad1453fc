/*
 * op.h - the op registry: what each op kind takes, checks and means.
 *
 * An op kind is declared once, here and in registry.c: its operands, its
 * attributes, the dtypes it accepts, whether its launch can live in a CUDA
 * graph, and a check of shapes and dtypes for one variant. Its
 * implementations live beside it, one table per backend, indexed by
 * enum op_id: host reference kernels (host.h) and CUDA kernels (cuda.h).
 *
 * Semantics shared by every implementation. "Rows" are all axes but the
 * last, flattened; "cols" the last axis. Floats are computed in f32 (inputs
 * converted exactly, results rounded to nearest even on store); the CUDA
 * kernels may sum in another order, and are held to per-dtype bounds.
 *
 *  fill       () -> out                 out = value                    (any dtype)
 *  copy       (x) -> out                out = x converted to out's dtype; numel equal;
 *                                        float<->float or i32->i32 only
 *  add        (a, b) -> out             out = a + b; b's shape is a's shape or a
 *                                        trailing part of it (broadcast over rows)
 *  mul        (a, b) -> out             out = a * b; same broadcast as add
 *  scale      (x) -> out                out = alpha * x
 *  matmul     (a, b) -> out             out[M,N] = op(a)[M,K] @ op(b)[K,N], rank 2;
 *                                        op(a) = a^T when trans_a, likewise b
 *  rmsnorm    (x, w) -> out             out = x / sqrt(mean(x^2) + eps) * w, per row;
 *                                        w is [cols]
 *  layernorm  (x, w, b) -> out          out = (x - mean) / sqrt(var + eps) * w + b,
 *                                        per row, biased variance
 *  silu_mul   (x) -> out                x is [rows, 2N], out [rows, N]:
 *                                        out[r,j] = silu(x[r,j]) * x[r,N+j],
 *                                        silu(g) = g / (1 + exp(-g))
 *  gelu       (x) -> out                out = 0.5 x (1 + erf(x / sqrt 2))
 *  softmax    (x) -> out                per row, max subtracted first
 *  rope       (x, pos) -> out           x [T, heads*head_dim], pos [T] i32.
 *                                        For token t, head h, i < head_dim/2:
 *                                        f = the inverse frequency of pair i of
 *                                        the rope_type (rope-scaling.h: f32 steps
 *                                        as transformers takes them; default
 *                                        1 / f32(theta^(f32(2i) / head_dim))),
 *                                        a = pos[t] * f in f32, c = cos a * m,
 *                                        s = sin a * m (m: yarn's attention
 *                                        factor, else 1),
 *                                        x1 = x[t,h,i], x2 = x[t,h,i+head_dim/2],
 *                                        out[t,h,i] = x1 c - x2 s,
 *                                        out[t,h,i+head_dim/2] = x2 c + x1 s;
 *                                        c = s = NaN at a position the type is
 *                                        not exact for (dynamic from its
 *                                        original_max_position_embeddings on)
 *  embedding  (table, ids) -> out       table [V, H], ids [T] i32, out [T, H]:
 *                                        out[t] = table[ids[t]]; an id outside
 *                                        [0, V) gives a row of zeros
 *  kv_write   (x, pos) -> cache         x [T, W], pos [T] i32, cache [S, W]:
 *                                        cache[pos[t]] = x[t] for pos[t] in [0, S);
 *                                        other rows untouched; which of two equal
 *                                        positions wins is unspecified
 *  attention  (q, k, v) -> out          q, out [T, heads*head_dim]; k, v (caches)
 *                                        [S, kv_heads*head_dim]. L = min(kv_len, S).
 *                                        For token t, head h, g = h / (heads/kv_heads):
 *                                        s_j = scale * q[t,h] . k[j,g] for j < L,
 *                                        out[t,h] = sum_j softmax(s)_j v[j,g];
 *                                        L < 1 gives zeros. Every query token
 *                                        sees all L positions (no causal mask),
 *                                        unless causal: then query row t of T
 *                                        (the token at position L - T + t) sees
 *                                        the first L - (T - 1 - t) of them.
 *                                        The eager form's launch shape follows the
 *                                        host kv_len; the graph-safe form reads
 *                                        kv_len from the var's device mirror and
 *                                        launches for S.
 *  argmax     (x) -> out                out (i32) [rows] = index of the largest
 *                                        element of each row; ties: the first
 *
 * Fused kinds. Each computes exactly what its unfused sequence computes,
 * intermediates rounded to the dtype where the sequence stores them; only
 * the memory traffic and the kernel count differ. So a fused script and its
 * unfused twin give the same bytes on the host backend, and the CUDA
 * kernels are held to the same per-dtype bounds as the kinds they fuse.
 *
 *  add_rmsnorm     (x, r, w) -> (sum, out)  sum = add(x, r); out = rmsnorm(sum, w):
 *                                        the residual add and the norm that
 *                                        follows it; x, r, sum [rows, H], w [H]
 *  matmul_add      (x, a, b) -> out      out = add(x, matmul(a, b)): a product
 *                                        whose epilogue adds the residual x
 *                                        (x and out [M, N]; the product is
 *                                        rounded before the add)
 *  matmul_silu_mul (a, b) -> out         out = silu_mul(matmul(a, b)): op(b) is
 *                                        [K, 2N], gate columns first, out [M, N]
 *  rope_kv_write   (qkv, pos) -> (q, k_cache, v_cache)
 *                                        qkv [T, (heads + 2 kv_heads) * head_dim]
 *                                        read as three parts q | k | v;
 *                                        q = rope(qkv[:, q part]);
 *                                        kv_write(rope(qkv[:, k part]), pos) -> k_cache;
 *                                        kv_write(qkv[:, v part], pos) -> v_cache;
 *                                        caches [S, kv_heads * head_dim]
 *  rope_kv_write   (qkv, pos, q_w, k_w) -> (q, k_cache, v_cache)
 *                                        with the optional weights (both or
 *                                        neither), q_w, k_w [head_dim]:
 *                                        qk_norm(qkv, q_w, k_w) (eps; rounded to
 *                                        the dtype, as it stores) then
 *                                        rope_kv_write: Qwen3's norms folded in
 *
 *  qk_norm         (x, q_w, k_w) -> out  x [rows, C]: in each row the first heads
 *                                        heads of head_dim elements are rmsnorm'd
 *                                        with q_w [head_dim], the kv_heads heads
 *                                        after them with k_w, the other columns
 *                                        copied ((heads + kv_heads) head_dim <= C;
 *                                        Qwen3's norms of q and k, in place on a
 *                                        q|k|v row before rope_kv_write)
 *
 *  rmsnorm_matmul  (x, w, b) -> out      h = rmsnorm(x, w) rounded to x's dtype (as
 *                                        rmsnorm stores it), then with epilogue none
 *                                        out [M, N] = matmul(h, b), with silu_mul
 *                                        out [M, N/2] = matmul_silu_mul(h, b) (op(b)
 *                                        [K, N], gate columns first); x [M, K], w [K].
 *                                        The norm that precedes a product, folded
 *                                        into it (no trans_a)
 *
 *  rmsnorm_matmul_argmax (x, w, b) -> out, index
 *                                        out = rmsnorm_matmul(x, w, b) (epilogue
 *                                        none), index (i32) [M] = argmax(out) as
 *                                        stored: the final norm, the lm-head and
 *                                        the greedy pick of a decode step in one
 *                                        kind
 *
 *  rmsnorm_matmul_rope_kv_write (x, w, b, pos) -> q, k_cache, v_cache
 *                                        qkv = rmsnorm(x, w) @ op(b) rounded to x's
 *                                        dtype (rmsnorm_matmul's bytes), then
 *                                        rope_kv_write(qkv, pos): the attention
 *                                        input of a decode layer in one kind;
 *                                        op(b) [K, (heads + 2 kv_heads) head_dim]
 *
 *  decoder_layer (x, attn_norm, w_qkv, w_o, ffn_norm, w_gate_up, w_down, pos)
 *                -> (out, k_cache, v_cache)
 *                                        one Llama decoder layer, every weight
 *                                        [out, in] (the b of a product with
 *                                        trans_b):
 *                                        h = rmsnorm(x, attn_norm);
 *                                        qkv = matmul(h, w_qkv);
 *                                        rope_kv_write(qkv, pos) -> q, k_cache,
 *                                        v_cache; att = attention(q, k_cache,
 *                                        v_cache); x1 = matmul_add(x, att, w_o);
 *                                        h2 = rmsnorm(x1, ffn_norm); act =
 *                                        matmul_silu_mul(h2, w_gate_up);
 *                                        out = matmul_add(x1, act, w_down).
 *                                        x, out [T, H]; norms [H]; w_qkv
 *                                        [(heads + 2 kv_heads) head_dim, H]; w_o
 *                                        [H, heads head_dim]; w_gate_up [2F, H],
 *                                        gate rows first; w_down [H, F]; pos [T];
 *                                        caches [S, kv_heads head_dim]; out may
 *                                        be x. Eager and graph-safe forms as
 *                                        attention's, so a breakpoint in
 *                                        breakable mode: a kind for full mode.
 *                                        The host can fail it (no memory for the
 *                                        intermediates: host.h); CUDA runs it
 *                                        "persistent" (one kernel a layer, T = 1,
 *                                        bf16/f16, sm_90) or "split" (the kernels
 *                                        of the sequence in turn, any T)
 *
 * And the one unfused kind the fused ones need to have a twin:
 *
 *  slice      (x) -> out                x [rows, C], out [rows, W]:
 *                                        out[r, j] = x[r, start + j];
 *                                        start + W <= C (a column range, e.g.
 *                                        q, k or v out of one q|k|v product)
 *
 * Paged kinds (serving batches, formats/op-script.md). A paged cache is
 * [NB, BS, W]: NB blocks of BS positions of W columns; slot s names row
 * s % BS of block s / BS. Token rows are laid out request after request.
 *
 *  paged_kv_write (x, slots) -> cache    x [T, W], slots [T] i32, cache [NB, BS, W]:
 *                                        cache row slots[t] = x[t] for slots[t] in
 *                                        [0, NB*BS); other slots (the pad slot -1
 *                                        among them) write nothing
 *  rope_paged_kv_write (qkv, pos, slots) -> (q, k_cache, v_cache)
 *                                        rope_kv_write with the cache rows taken
 *                                        from slots instead of pos (pos still
 *                                        gives the rotation); caches [NB, BS, W];
 *                                        optional q_w, k_w after slots as
 *                                        rope_kv_write's
 *  paged_attention (q, k_cache, v_cache, block_table, seq_lens, query_start) -> out
 *                                        q, out [T, heads*head_dim]; caches
 *                                        [NB, BS, kv_heads*head_dim]; block_table
 *                                        [R, MB], seq_lens [R], query_start [R+1],
 *                                        all i32. Row t belongs to the first
 *                                        request r with query_start[r] <= t <
 *                                        query_start[r+1]; with n_r =
 *                                        query_start[r+1] - query_start[r] and
 *                                        i = t - query_start[r], it attends to
 *                                        the positions j < L_t = seq_lens[r] -
 *                                        n_r + 1 + i (causal within the chunk),
 *                                        L_t clamped to [0, MB*BS]; position j is
 *                                        row j % BS of block block_table[r, j / BS],
 *                                        skipped when that id is outside [0, NB).
 *                                        Scores and softmax as attention's. A row
 *                                        of no request, or with no position
 *                                        attended, is zeros. The eager form sizes
 *                                        its launch by the host's batch (struct
 *                                        op_batch); the graph-safe form by MB*BS.
 *
 * Mixture-of-experts kinds (host-moe.c, cuda-moe.cu). E experts, each a
 * SwiGLU block of I columns; K experts a token.
 *
 *  moe_router (logits) -> (ids, weights)
 *                                        logits [T, E] (float), ids [T, K] i32,
 *                                        weights [T, K] float. Per row, in f32:
 *                                        unless topk_first, p = softmax(logits)
 *                                        (as softmax) and the K largest p are
 *                                        chosen; with topk_first the K largest
 *                                        logits are chosen and p is the softmax
 *                                        of those K. Chosen in descending order;
 *                                        of equal values the lower expert index
 *                                        first; NaN counts as larger than any
 *                                        number. With renorm each chosen p is
 *                                        divided by their sum (summed in order).
 *                                        ids[t,k] = the k-th chosen expert,
 *                                        weights[t,k] its p.
 *  moe_router_paged (logits, slots) -> (ids, weights)
 *                                        moe_router, but a row whose slots[t] < 0
 *                                        (a padded row of a serving batch) routes
 *                                        nowhere: ids -1, weights 0
 *  moe_experts (x, ids, weights, gate_up, down[, residual]) -> out
 *                                        x, out [T, H]; gate_up [E*2I, H]: expert
 *                                        e's rows e*2I .. e*2I+2I-1, gate then up
 *                                        (each [I, H], as checkpoints store them);
 *                                        down [E*H, I]: expert e's rows e*H ..
 *                                        e*H+H-1. For row t and k < K with
 *                                        e = ids[t,k] in [0, E):
 *                                        a = matmul_silu_mul(x[t], gate_up_e) (the
 *                                        product rounded to the dtype, then
 *                                        silu_mul, rounded), y = a @ down_e^T
 *                                        rounded to the dtype (dot products
 *                                        summed in index order); out[t] = sum over k in order of
 *                                        weights[t,k] * y (f32, rounded on store).
 *                                        An id outside [0, E) adds nothing; a row
 *                                        with none is zeros. With the optional
 *                                        residual r (out's shape and dtype):
 *                                        out = add(r, that sum rounded to the
 *                                        dtype), add's bytes; out may be r (each
 *                                        element read before it is written).
 *                                        The eager form reads
 *                                        the per-expert token counts back to the
 *                                        host and launches the products for
 *                                        exactly the routed rows; the graph-safe
 *                                        form keeps counts and offsets on the
 *                                        device and launches for every expert,
 *                                        each block looping over the rows the
 *                                        counts give it. Both give the same bytes.
 *  gated_add (x, y, g) -> out            x, y, out [rows, C], g [rows, 1]:
 *                                        out = x + sigmoid(g[r]) * y, sigmoid(g) =
 *                                        1 / (1 + exp(-g)), in f32 (Qwen2-MoE's
 *                                        shared expert and its gate)
 *
 * Tensor parallelism (engine/shard.c inserts these; dist/comm.h carries
 * them). N ranks run the same op at once, each on its own operands; with
 * one rank each is a copy.
 *
 *  all_reduce (x) -> out                 out = the sum over the ranks of their x,
 *                                        elementwise, in f32 in rank order on the
 *                                        host (NCCL's order on cuda), rounded on
 *                                        store; out may be x. A breakpoint in
 *                                        breakable mode ("a collective: every
 *                                        rank must launch it"); captured in full
 *                                        mode
 *  all_gather (x) -> out                 x [rows, C], out [rows, N*C]:
 *                                        out[r, k*C + j] = rank k's x[r, j];
 *                                        breaks and is captured as all_reduce
 *  vocab_embedding (table, ids) -> out   a rank's share of a vocabulary-parallel
 *                                        embedding: table [V', H] holds rows
 *                                        vocab_start .. vocab_start+V'-1 of the
 *                                        whole table; out[t] = table[ids[t] -
 *                                        vocab_start] for ids in that range, else
 *                                        a row of zeros (an all_reduce then sums
 *                                        the ranks' rows)
 *
 * Attributes (defaults in brackets):
 *  fill: value [0]; scale: alpha [1]; matmul: trans_a [false], trans_b [false];
 *  rmsnorm: eps [1e-6]; layernorm: eps [1e-5]; rope: heads, head_dim, theta
 *  [10000], then the rope_type attributes (rope-scaling.h's RS_* order):
 *  rope_type [default], factor [1], low_freq_factor [1], high_freq_factor
 *  [4], original_max_position_embeddings [0], beta_fast [32], beta_slow [1],
 *  attention_factor [0: 0.1 ln(factor) + 1], truncate [true]; attention: heads, kv_heads [heads], head_dim, kv_len (int or
 *  host var), scale [0, meaning 1/sqrt(head_dim)], causal [false]; add_rmsnorm: eps [1e-6];
 *  matmul_add, matmul_silu_mul: trans_a [false], trans_b [false];
 *  rope_kv_write: heads, kv_heads [heads], head_dim, theta [10000], the
 *  rope_type attributes as rope's, eps [1e-6] (with q_w and k_w only:
 *  stored in plans only then); qk_norm: heads, kv_heads [heads],
 *  head_dim, eps [1e-6];
 *  slice: start (required); rope_paged_kv_write: as rope_kv_write;
 *  paged_attention: heads, kv_heads [heads], head_dim, scale [0];
 *  moe_router, moe_router_paged: top_k, renorm [false], topk_first [false];
 *  moe_experts: experts; vocab_embedding: vocab_start [0]; rmsnorm_matmul:
 *  eps (required), trans_b [false], epilogue [none] (none or silu_mul);
 *  rmsnorm_matmul_argmax: eps (required), trans_b [false];
 *  rmsnorm_matmul_rope_kv_write: rope_kv_write's, then eps (required),
 *  trans_b [false]; decoder_layer: rope_kv_write's but its eps (heads,
 *  kv_heads [heads], head_dim, theta [10000], the rope_type attributes),
 *  then eps (required, both norms'), kv_len (required, int or host var),
 *  scale [0], causal [false] (attention's).
 *
 * Weights stored [out, in], as checkpoints store them, are the b of a
 * product with trans_b: true; the fast small-M kernels want that layout.
 */
#ifndef BCG_OPS_OP_H
#define BCG_OPS_OP_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "plan.h"

struct dist_comm;                  /* dist/comm.h */

enum op_id {
	OP_FILL,
	OP_COPY,
	OP_ADD,
	OP_MUL,
	OP_SCALE,
	OP_MATMUL,
	OP_RMSNORM,
	OP_LAYERNORM,
	OP_SILU_MUL,
	OP_GELU,
	OP_SOFTMAX,
	OP_ROPE,
	OP_EMBEDDING,
	OP_KV_WRITE,
	OP_ATTENTION,
	OP_ARGMAX,
	OP_ADD_RMSNORM,
	OP_MATMUL_ADD,
	OP_MATMUL_SILU_MUL,
	OP_ROPE_KV_WRITE,
	OP_SLICE,
	OP_PAGED_KV_WRITE,
	OP_ROPE_PAGED_KV_WRITE,
	OP_PAGED_ATTENTION,
	OP_QK_NORM,
	OP_MOE_ROUTER,
	OP_MOE_ROUTER_PAGED,
	OP_MOE_EXPERTS,
	OP_GATED_ADD,
	OP_ALL_REDUCE,
	OP_ALL_GATHER,
	OP_VOCAB_EMBEDDING,
	OP_RMSNORM_MATMUL,
	OP_RMSNORM_MATMUL_ROPE_KV_WRITE,
	OP_DECODER_LAYER,
	OP_RMSNORM_MATMUL_ARGMAX,
	OP_COUNT
};

/* Attribute positions in op_call.attr: the registry declares each kind's
 * attributes in exactly this order, and the plan stores every attribute
 * (defaults filled in by the script parser; kv_heads defaults to heads). */
enum { FILL_VALUE = 0 };
enum { SCALE_ALPHA = 0 };
enum { MATMUL_TRANS_A = 0, MATMUL_TRANS_B = 1 };   /* and the fused products */
enum { NORM_EPS = 0 };                       /* rmsnorm, layernorm, add_rmsnorm */
enum { ROPE_HEADS = 0, ROPE_HEAD_DIM = 1, ROPE_THETA = 2, ROPE_SCALING = 3 };
enum { ATTN_HEADS = 0, ATTN_KV_HEADS = 1, ATTN_HEAD_DIM = 2, ATTN_KV_LEN = 3,
       ATTN_SCALE = 4, ATTN_CAUSAL = 5 };
enum { SLICE_START = 0 };
enum { RKV_HEADS = 0, RKV_KV_HEADS = 1, RKV_HEAD_DIM = 2, RKV_THETA = 3, RKV_SCALING = 4 };
                                             /* and rope_paged_kv_write */
/* rope_kv_write's eps (qk_norm's, for q_w and k_w), after the 9 rope_type
 * attributes from RKV_SCALING; rope_paged_kv_write's too. */
enum { RKV_EPS = RKV_SCALING + 9 };
/* rope_kv_write's operands; rope_paged_kv_write has slots at 2, then the
 * weights (RPKV_*). The weights are optional: both or neither. */
enum { RKV_QKV = 0, RKV_POS = 1, RKV_Q_W = 2, RKV_K_W = 3 };
enum { RPKV_SLOTS = 2, RPKV_Q_W = 3, RPKV_K_W = 4 };
/* ROPE_SCALING and RKV_SCALING: where the rope_type attributes start, in
 * the order of rope-scaling.h's RS_* (rope_type, factor, ...). */
enum { RNM_EPS = 0, RNM_TRANS_B = 1, RNM_EPILOGUE = 2 };   /* rmsnorm_matmul */
enum { RNM_EPI_NONE = 0, RNM_EPI_SILU_MUL = 1 };           /* its epilogue's choices */
/* rmsnorm_matmul_argmax: rmsnorm_matmul's first two, at its positions */
enum { RNA_EPS = RNM_EPS, RNA_TRANS_B = RNM_TRANS_B };
/* rmsnorm_matmul_rope_kv_write: rope_kv_write's attributes (RKV_*, the 9
 * rope_type ones from RKV_SCALING), then these two. */
enum { RRK_EPS = RKV_SCALING + 9, RRK_TRANS_B = RRK_EPS + 1 };
/* its operands */
enum { RRK_X = 0, RRK_W = 1, RRK_B = 2, RRK_POS = 3 };
/* decoder_layer: rope_kv_write's attributes (RKV_*, the 9 rope_type ones
 * from RKV_SCALING), then these four; and its operands. */
enum { DL_EPS = RKV_SCALING + 9, DL_KV_LEN = DL_EPS + 1, DL_SCALE = DL_EPS + 2,
       DL_CAUSAL = DL_EPS + 3 };
enum { DL_X = 0, DL_ATTN_NORM = 1, DL_W_QKV = 2, DL_W_O = 3, DL_FFN_NORM = 4,
       DL_W_GATE_UP = 5, DL_W_DOWN = 6, DL_POS = 7 };
enum { DL_OUT = 0, DL_K_CACHE = 1, DL_V_CACHE = 2 };
enum { QKN_HEADS = 0, QKN_KV_HEADS = 1, QKN_HEAD_DIM = 2, QKN_EPS = 3 };
enum { PATTN_HEADS = 0, PATTN_KV_HEADS = 1, PATTN_HEAD_DIM = 2, PATTN_SCALE = 3 };
/* paged_attention's operands */
enum { PATTN_Q = 0, PATTN_K = 1, PATTN_V = 2, PATTN_TABLE = 3, PATTN_SEQ_LENS = 4,
       PATTN_QUERY_START = 5 };

enum { MOE_TOP_K = 0, MOE_RENORM = 1, MOE_TOPK_FIRST = 2 };   /* the routers */
enum { MOE_EXPERTS = 0 };                                      /* moe_experts */
enum { VEMB_VOCAB_START = 0 };                                 /* vocab_embedding */
/* The most experts, and experts a token, the kernels take. */
#define OP_MOE_MAX_EXPERTS 256
#define OP_MOE_MAX_TOP_K   16

#define OP_MAX_IN    8
#define OP_MAX_OUT   3
#define OP_MAX_ATTRS 20

/* One operand at one variant's shape. */
struct op_tensor {
	int     dtype;                 /* enum plan_dtype */
	int     rank;
	int64_t dim[PLAN_MAX_RANK];
	void   *data;                  /* host or device address; NULL in checks */
};

enum op_attr_type {
	OP_ATTR_INT    = 1,
	OP_ATTR_FLOAT  = 2,
	OP_ATTR_BOOL   = 3,
	OP_ATTR_INTVAR = 4,            /* an integer or the name of a host var */
	OP_ATTR_ENUM   = 5,            /* one of the spec's choices, by name; stored
	                                  in plans as a string, held as its index */
};

struct op_attr_spec {
	const char *name;              /* NULL ends the list */
	int         type;              /* enum op_attr_type */
	int         required;
	double      dflt;              /* when not required (ENUM: the index) */
	const char *help;
};

union op_value {
	int64_t i;                     /* INT, BOOL, INTVAR */
	double  f;                     /* FLOAT */
};

/*
 * The host's view of the step's batch (serve/batch.h), for the launches
 * whose shape follows it: paged_attention's eager form sizes its split of
 * the KV length by max_seq_len. The engine owns it and updates it before
 * each step; NULL (a call outside an engine) means "unknown", and the
 * eager form then launches for the captured bounds as the graph-safe one
 * does. The device reads the batch from its tensors, never from here.
 */
struct op_batch {
	uint32_t tokens;               /* rows that belong to a request */
	uint32_t requests;             /* requests with tokens */
	uint32_t max_seq_len;          /* the longest seq_len of the batch */
	uint32_t max_query_len;        /* the most tokens of one request */
};

/* One launch of an op: operands, attributes resolved for this step. */
struct op_call {
	const struct op_kind *kind;
	int                   nin;
	int                   nout;
	struct op_tensor      in[OP_MAX_IN];
	struct op_tensor      out[OP_MAX_OUT];
	union op_value        attr[OP_MAX_ATTRS];     /* by position in kind->attrs */
	const int32_t        *attr_dev[OP_MAX_ATTRS]; /* INTVAR bound to a var: its
	                                                 i32 mirror (device memory
	                                                 on cuda); NULL otherwise */
	int                   graph_safe;             /* launch the graph-safe form */
	unsigned              const_in;               /* bit k: in[k] is a weight, which
	                                                 no op of a step writes: a kernel
	                                                 may load it before its PDL wait
	                                                 (0: treat every input as written) */
	unsigned              ready_in;               /* bit k: in[k] is in place before the
	                                                 step's first kernel and no op of the
	                                                 step writes it: a weight, or an input
	                                                 the host feeds (a serving batch's
	                                                 lengths and block tables). A kernel
	                                                 may read it before its PDL wait, not
	                                                 cache it across steps (0: treat every
	                                                 input as written) */
	int                   impl;                   /* which implementation of the
	                                                 kind the backend runs: an
	                                                 index into its list for the
	                                                 kind (0: the first) */
	const struct op_batch *batch;                 /* the step's batch on the host
	                                                 (see struct op_batch); NULL
	                                                 when unknown */
	const char            *name;                  /* the op's name, for the
	                                                 messages of a collective
	                                                 (comm->current); may be
	                                                 NULL */
	struct dist_comm      *comm;                  /* the rank's communicator
	                                                 (dist/comm.h) for the
	                                                 collective kinds; NULL for
	                                                 a plan of one rank */
};

enum op_capture {
	OP_CAPTURE_ALWAYS    = 1,      /* same launch every step: lives in graphs */
	OP_CAPTURE_SAFE_FORM = 2,      /* eager in breakable mode; a graph-safe
	                                  form serves full mode */
	OP_CAPTURE_NEVER     = 3,      /* always a breakpoint */
};

#define OP_INPLACE 0x1u            /* out[0] may be the same tensor as in[0] */
#define OP_RESIDUAL_LAST 0x2u      /* the last input (a residual added to out[0])
                                      may be left out; out[0] may be that input */

#define OP_DTYPE_BIT(d)  (1u << (d))
#define OP_DTYPES_FLOAT  (OP_DTYPE_BIT(PLAN_DTYPE_F32) | OP_DTYPE_BIT(PLAN_DTYPE_F16) | \
                          OP_DTYPE_BIT(PLAN_DTYPE_BF16))
#define OP_DTYPES_ALL    (OP_DTYPES_FLOAT | OP_DTYPE_BIT(PLAN_DTYPE_I32))

struct op_kind {
	enum op_id                 id;
	const char                *name;
	const char                *summary;   /* one line, for `bcgtool ops` */
	const char *const         *inputs;    /* operand names, NULL-terminated */
	const char *const         *outputs;
	const struct op_attr_spec *attrs;     /* ends with a NULL name */
	unsigned                   dtypes;    /* OP_DTYPE_BIT mask of the main dtype */
	int                        capture;   /* enum op_capture */
	const char                *capture_why; /* why not always capturable; NULL if it is */
	unsigned                   flags;     /* OP_* */
	/* Check CALL's operands and attributes (data pointers unused). On a
	 * mismatch write one sentence to MSG naming the operand, the expected
	 * and the actual shape or dtype, and return -1; else return 0. */
	int (*check)(const struct op_call *call, char *msg, size_t len);
};

/* The kind called NAME, or NULL. */
const struct op_kind *op_kind_find(const char *name);
/* The kind with id ID (0 <= ID < OP_COUNT). */
const struct op_kind *op_kind_get(enum op_id id);
/* Whether op OP of PLAN is a collective (all_reduce, all_gather: the
 * kinds the sharding pass inserts); 0 for an op out of range. */
int op_is_collective(const plan_t *plan, uint32_t op);
/* Number of inputs, outputs, attributes of KIND (inputs: all it names,
 * the optional residual of OP_RESIDUAL_LAST among them). */
int op_kind_count_inputs(const struct op_kind *kind);
int op_kind_count_outputs(const struct op_kind *kind);
int op_kind_count_attrs(const struct op_kind *kind);
/* The fewest inputs KIND takes: the count less its optional last ones
 * (rope_kv_write's and rope_paged_kv_write's q_w, k_w), which a call
 * gives all or none of: it has this many inputs or op_kind_count_inputs. */
int op_kind_min_inputs(const struct op_kind *kind);
/* Position of attribute NAME in KIND's list, or -1. */
int op_kind_attr_index(const struct op_kind *kind, const char *name);
/* Position of KIND's kv_heads attribute, whose default is no fixed number
 * but the op's heads (whose position goes to *HEADS when HEADS is not
 * NULL), or -1 for a kind without one. */
int op_kind_kv_heads_attr(const struct op_kind *kind, int *heads);
/* The names an enum attribute SPEC takes, NULL-terminated (by the
 * attribute's name: rope_type's are rope-scaling.h's); NULL for others. */
const char *const *op_attr_choices(const struct op_attr_spec *spec);
/* Index of NAME among the choices of an enum attribute SPEC, or -1. */
int op_attr_choice(const struct op_attr_spec *spec, const char *name);

/* Elements of a tensor; its rows (all axes but the last) and cols. */
int64_t op_tensor_numel(const struct op_tensor *t);
int64_t op_tensor_rows(const struct op_tensor *t);
int64_t op_tensor_cols(const struct op_tensor *t);

/* rmsnorm_matmul_argmax's CALL as its two kinds, which the registry's
 * check, the host reference and CUDA's launcher all run: RNM, rmsnorm_
 * matmul (x, w, b) -> out with epilogue none, and AM (may be NULL),
 * argmax (out) -> index. Their kind is NULL and their impl CALL's, for
 * the caller to set where it reads them. */
static inline void op_rna_parts(const struct op_call *call, struct op_call *rnm,
                                struct op_call *am)
{
	*rnm = *call;
	rnm->kind = NULL;
	rnm->nout = 1;
	rnm->attr[RNM_EPILOGUE].i = RNM_EPI_NONE;
	if (am == NULL)
		return;
	memset(am, 0, sizeof *am);
	am->nin = 1;
	am->nout = 1;
	am->in[0] = call->out[0];
	am->out[0] = call->out[1];
	am->graph_safe = call->graph_safe;
	am->name = call->name;
	am->impl = call->impl;
}

#endif /* BCG_OPS_OP_H */
