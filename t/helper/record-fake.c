/*
 * record-fake.c - a program that does, for `bcgtool record`, what the
 * recording library would see a CUDA program do, on a machine without a
 * GPU: it writes its own recording log ($BCG_RECORD_DIR/PID.bcglog) with
 * the recorder's writer. The shell tests run record on it to check the
 * command from end to end (plans written, per-process naming, exit codes).
 *
 *   record-fake breakable STEPS   graph, eager kernel, graph; STEPS steps
 *   record-fake fork STEPS        the same in this process and in a child
 *   record-fake fork-eager STEPS  the same here, one eager kernel in a child
 *   record-fake eager             one eager kernel, no graph
 *   record-fake idle              a log with no GPU work
 *   record-fake nvtx STEPS        breakable steps inside NVTX ranges "step"
 *   record-fake devices STEPS     breakable steps on device 0 and on device 1,
 *                                 each with its own allocation at one address
 *   record-fake update STEPS      one executable graph: STEPS launches, then
 *                                 cuGraphExecUpdate to other parameters and
 *                                 STEPS launches, then back and STEPS more
 *   record-fake timed             three breakable steps with the launch
 *                                 calls' host times and the GPU times of
 *                                 their work set by hand (timed() below)
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plan.h"
#include "record/reclog.h"

static struct reclog_writer *w;
static uint64_t t_now = 1;
static uint32_t dev;            /* the device of the work written */

static void put(struct reclog_rec *r)
{
	if (reclog_write(w, r) != 0) {
		fprintf(stderr, "record-fake: cannot write the log\n");
		exit(3);
	}
	reclog_rec_end(r);
}

static void put_kernel(struct reclog_rec *r, uint64_t func, uint32_t gx, uint64_t arg)
{
	uint8_t args[8];

	reclog_put_u64(r, func);
	reclog_put_u32(r, gx);
	reclog_put_u32(r, 1);
	reclog_put_u32(r, 1);
	reclog_put_u32(r, 128);
	reclog_put_u32(r, 1);
	reclog_put_u32(r, 1);
	for (int i = 0; i < 5; i++)
		reclog_put_u32(r, 0);
	for (int i = 0; i < 8; i++)
		args[i] = (uint8_t)(arg >> (8 * i));
	reclog_put_bytes(r, args, 8);
}

static void device_alloc(void)
{
	struct reclog_rec r;

	reclog_rec_begin(&r, RECLOG_DEVICE, t_now++);
	reclog_put_u32(&r, dev);
	reclog_put_str(&r, "Fake GPU");
	reclog_put_u32(&r, 9);
	reclog_put_u32(&r, 0);
	reclog_put_u32(&r, 13000);
	put(&r);
	reclog_rec_begin(&r, RECLOG_ALLOC, t_now++);
	reclog_put_u32(&r, dev);
	reclog_put_u64(&r, 0x10000000);
	reclog_put_u64(&r, 1 << 20);
	reclog_put_u32(&r, 0);
	put(&r);
}

static void open_log(void)
{
	const char *dir = getenv("BCG_RECORD_DIR");
	char path[4096];
	struct reclog_rec r;
	static const char image[] = "\x7f" "ELF\0fake_gemm\0fake_attention\0";

	if (dir == NULL) {
		fprintf(stderr, "record-fake: BCG_RECORD_DIR is not set\n");
		exit(3);
	}
	snprintf(path, sizeof path, "%s/%d.bcglog", dir, (int)getpid());
	w = reclog_open(path, (uint32_t)getpid());
	if (w == NULL) {
		perror(path);
		exit(3);
	}
	reclog_rec_begin(&r, RECLOG_MODULE, t_now++);
	reclog_put_u32(&r, 1);
	reclog_put_u32(&r, RECLOG_MODULE_IMAGE);
	reclog_put_u64(&r, sizeof image);
	reclog_put_bytes(&r, image, sizeof image);
	reclog_put_str(&r, "");
	put(&r);
	for (int f = 1; f <= 2; f++) {
		reclog_rec_begin(&r, RECLOG_FUNCTION, t_now++);
		reclog_put_u64(&r, (uint64_t)f);
		reclog_put_u64(&r, 0);
		reclog_put_str(&r, f == 1 ? "fake_gemm" : "fake_attention");
		reclog_put_u32(&r, 1);
		reclog_put_u32(&r, 0);
		reclog_put_u32(&r, 8);
		put(&r);
	}
	device_alloc();
}

static void eager(uint32_t corr, uint32_t gx)
{
	struct reclog_rec r;

	reclog_rec_begin(&r, RECLOG_KERNEL, t_now++);
	reclog_put_u32(&r, dev);
	reclog_put_u64(&r, 7);
	reclog_put_u32(&r, corr);
	put_kernel(&r, 2, gx, 0x10000100);
	put(&r);
}

/* A chain of NODES gemms, node i's word at BASE + 64 i; TYPE GRAPH (an
 * instantiation) or GRAPH_UPDATE. */
static void graph_as(uint32_t type, uint64_t exec, uint32_t nodes, uint64_t base)
{
	struct reclog_rec r;

	reclog_rec_begin(&r, type, t_now++);
	reclog_put_u64(&r, exec);
	reclog_put_u64(&r, exec + 1);
	reclog_put_u32(&r, dev);
	reclog_put_u32(&r, nodes);
	reclog_put_u32(&r, nodes - 1);
	for (uint32_t i = 0; i < nodes; i++) {
		reclog_put_u32(&r, PLAN_NODE_KERNEL);
		put_kernel(&r, 1, 8, base + 64 * i);
	}
	for (uint32_t i = 0; i + 1 < nodes; i++) {
		reclog_put_u32(&r, i);
		reclog_put_u32(&r, i + 1);
		for (int k = 0; k < 3; k++)
			reclog_put_u32(&r, 0);
	}
	put(&r);
}

static void graph(uint64_t exec, uint32_t nodes)
{
	graph_as(RECLOG_GRAPH, exec, nodes, 0x10000000);
}

static void launch(uint64_t exec, uint32_t corr)
{
	struct reclog_rec r;

	reclog_rec_begin(&r, RECLOG_GRAPH_LAUNCH, t_now++);
	reclog_put_u32(&r, dev);
	reclog_put_u64(&r, 7);
	reclog_put_u64(&r, exec);
	reclog_put_u32(&r, corr);
	put(&r);
}

static void range(const char *name)
{
	struct reclog_rec r;

	reclog_rec_begin(&r, name != NULL ? RECLOG_RANGE_PUSH : RECLOG_RANGE_POP, t_now++);
	reclog_put_u64(&r, 1);
	if (name != NULL)
		reclog_put_str(&r, name);
	put(&r);
}

static void breakable(int steps, int nvtx)
{
	uint32_t corr = 1;

	graph(0xA0, 3);
	graph(0xB0, 2);
	for (int s = 0; s < steps; s++) {
		if (nvtx)
			range("step");
		launch(0xA0, corr++);
		eager(corr++, (uint32_t)s + 1);
		launch(0xB0, corr++);
		if (nvtx)
			range(NULL);
	}
}

/* Breakable steps on devices 0 and 1, one NVTX-less sequence each. */
static void devices(int steps)
{
	uint32_t corr = 1;

	dev = 1;
	device_alloc();
	for (dev = 0; dev < 2; dev++) {
		graph(0xA0, 3);
		graph(0xB0, 2 + dev);
	}
	for (int s = 0; s < steps; s++)
		for (dev = 0; dev < 2; dev++) {
			launch(0xA0, corr++);
			eager(corr++, (uint32_t)s + 1);
			launch(0xB0, corr++);
		}
	dev = 0;
}

/* One executable updated to another capture's parameters and back. */
static void update(int steps)
{
	uint32_t corr = 1;

	graph(0xA0, 2);
	for (int k = 0; k < 3; k++) {
		if (k > 0)
			graph_as(RECLOG_GRAPH_UPDATE, 0xA0, 2, k == 1 ? 0x10001000 : 0x10000000);
		for (int s = 0; s < steps; s++)
			launch(0xA0, corr++);
	}
}

static void activity(uint32_t corr, uint32_t kind, uint64_t start, uint64_t end)
{
	struct reclog_rec r;

	reclog_rec_begin(&r, RECLOG_ACTIVITY, t_now++);
	reclog_put_u32(&r, corr);
	reclog_put_u32(&r, kind);
	reclog_put_u64(&r, start);
	reclog_put_u64(&r, end);
	put(&r);
}

/*
 * Three steps of graph A, eager kernel E, graph B, each step s at T =
 * 1,000,000 + 100,000 s ns; in ns after T, the launch calls on the host
 * and the work's GPU start and end:
 *
 *   step  A host  A GPU         E host  E GPU           B host  B GPU
 *   0     0       5000-8000     1000    9000-10000      3000    14000-20000
 *   1     0       5000-8000     1500    10000-11000     3000    14000-20000
 *   2     0       6000-9000     3000    13000-14000     4000    18000-24000
 *
 * So, from the step's first item (A): E starts 4000, 5000, 7000 ns after
 * A on the GPU (median 5000) and is launched 1000, 1500, 3000 after it
 * (median 1500); B starts 9000, 9000, 12000 after (median 9000),
 * launched 3000, 3000, 4000 after (median 3000). A takes 3000 ns, E 1000,
 * B 6000; the steps span 15000, 15000, 18000 (median 15000).
 */
static void timed(void)
{
	static const uint64_t t[3][9] = {
		{ 0, 5000, 8000, 1000, 9000, 10000, 3000, 14000, 20000 },
		{ 0, 5000, 8000, 1500, 10000, 11000, 3000, 14000, 20000 },
		{ 0, 6000, 9000, 3000, 13000, 14000, 4000, 18000, 24000 },
	};
	uint32_t corr = 1;

	graph(0xA0, 3);
	graph(0xB0, 2);
	for (int s = 0; s < 3; s++) {
		uint64_t base = 1000000 + 100000 * (uint64_t)s;
		t_now = base + t[s][0];
		launch(0xA0, corr);
		activity(corr++, RECLOG_ACT_GRAPH, base + t[s][1], base + t[s][2]);
		t_now = base + t[s][3];
		eager(corr, 1);
		activity(corr++, RECLOG_ACT_KERNEL, base + t[s][4], base + t[s][5]);
		t_now = base + t[s][6];
		launch(0xB0, corr);
		activity(corr++, RECLOG_ACT_GRAPH, base + t[s][7], base + t[s][8]);
	}
}

static void close_log(void)
{
	struct reclog_rec r;

	reclog_rec_begin(&r, RECLOG_END, t_now++);
	put(&r);
	if (reclog_close(w) != 0)
		exit(3);
}

int main(int argc, char **argv)
{
	int steps = argc > 2 ? atoi(argv[2]) : 3;

	if (argc < 2) {
		fprintf(stderr, "usage: record-fake breakable|fork|eager|idle|nvtx|devices|update|timed [STEPS]\n");
		return 2;
	}
	if (strcmp(argv[1], "fork") == 0 || strcmp(argv[1], "fork-eager") == 0) {
		pid_t pid = fork();
		int status;
		if (pid < 0)
			return 3;
		open_log();
		if (pid == 0 && argv[1][4] != '\0')
			eager(1, 1);
		else
			breakable(pid == 0 ? steps + 1 : steps, 0);
		close_log();
		if (pid == 0)
			_exit(0);
		if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
			return 3;
		return 0;
	}
	open_log();
	if (strcmp(argv[1], "breakable") == 0)
		breakable(steps, 0);
	else if (strcmp(argv[1], "nvtx") == 0)
		breakable(steps, 1);
	else if (strcmp(argv[1], "devices") == 0)
		devices(steps);
	else if (strcmp(argv[1], "update") == 0)
		update(steps);
	else if (strcmp(argv[1], "timed") == 0)
		timed();
	else if (strcmp(argv[1], "eager") == 0)
		eager(1, 1);
	else if (strcmp(argv[1], "idle") != 0)
		return 2;
	close_log();
	return 0;
}
