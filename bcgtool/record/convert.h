/*
 * convert.h - from recording logs to a plan: what `bcgtool record` does
 * once the program has run. CPU only, no CUDA: the unit tests feed it
 * logs written with the recorder's own writer (reclog.h).
 *
 * How a recording becomes a plan (bcgtool-record(1) says it for users):
 *
 *  - Work is the eager kernels, copies and memsets and the graph launches
 *    of a process, per device, in the order the program issued them.
 *    Work issued while its stream was being captured never reaches the
 *    log as eager work: it comes back as the nodes of the graph
 *    instantiated from the capture.
 *  - Steps: with a step name, each NVTX range of that name (push/pop on
 *    one thread, or start/end) is a step, holding the work issued inside
 *    it. Without one, steps are found in each device's sequence of graph
 *    launches: a step ends where a graph comes again within it, where a
 *    graph follows more than one graph in the run, or where a graph is
 *    followed by more than one; a step then runs from its first graph
 *    launch to its last.
 *  - Inside a step, each graph launch is a segment, and the eager work
 *    between two graph launches (or before the first, or after the last,
 *    inside an NVTX step) is one breakpoint.
 *  - Steps of one shape (the same executable graphs in the same order,
 *    with breaks in the same places, whatever the breaks run) are one
 *    variant, numbered 1, 2, ... in order of first appearance across
 *    devices; the most recent step of a shape gives its records (the
 *    launches of its breaks), every step of it the medians of the
 *    recorded times, and each break's detail says how many distinct
 *    launch shapes (kernels, grids, blocks) it had over the steps.
 *  - Each item's start offsets (plan format 1.7): the median, over the
 *    variant's steps whose items all have times and started in order, of
 *    its GPU start (a break's first launch) less the step's first item's,
 *    and of its launch call's time in the log less the first launch
 *    call's; 0 for the first item, and for every item where no step
 *    counts.
 *  - An executable graph runs what it was instantiated from until the
 *    program updates it: cuGraphExecUpdate gives it the nodes of another
 *    graph of the same topology, cuGraphExecKernelNodeSetParams one
 *    kernel node's function, shape and parameters (the node named by its
 *    place in the graph walked at instantiation). Each launch is of what
 *    the executable ran then; what it ran differently is another graph of
 *    the plan, so steps before and after an update are distinct shapes
 *    (variants), and an executable set back to what it ran before is that
 *    graph again.
 *  - Each kernel's parameter words that hold an address inside a device
 *    allocation live at the time become patches; the allocations they
 *    name are kept (with their contents where the log has a snapshot).
 *  - A function's module is the module its CUmodule handle names (the
 *    latest linked to it by a MODULE_HANDLE record before the function
 *    was first seen, and not unloaded then) when that module's image
 *    holds the function's name; else the newest module loaded before the
 *    function was first seen whose image holds the name; modules
 *    without images, or a function no image holds, give a module that is
 *    recorded but not replayable.
 */
#ifndef BCG_RECORD_CONVERT_H
#define BCG_RECORD_CONVERT_H

#include <stddef.h>
#include <stdint.h>

#include "plan.h"
#include "record/reclog.h"

struct record_opts {
	const char *step;        /* NVTX range name; NULL: find repeating steps */
	const char *command;     /* the command line, shell-quoted words */
	const char *tool;        /* "bcgtool 0.1.0" */
	uint64_t    wall_ns;     /* the command's wall time */
	int64_t     created;     /* plan_now() */
	int         snapshot;    /* --snapshot was given */
	/* Called with each note (a log's own notes, a cut-short log, work
	 * that could not be placed); may be NULL. */
	void      (*note)(void *ctx, const char *msg);
	void       *note_ctx;
};

struct record_summary {
	uint32_t processes;
	uint32_t devices;
	uint64_t steps;
	uint32_t variants;
	uint32_t segments;
	uint32_t breaks;
	uint32_t launches;
	uint32_t modules;
	uint32_t modules_without_image;
	uint32_t allocs;
	uint32_t snapshots;
	uint64_t graph_launches;
	uint64_t eager_launches;
	uint32_t updates;        /* executable graphs updated (whole or a node) */
};

/* What record_convert answers. */
enum record_result {
	RECORD_OK           = 0,
	RECORD_NO_GPU_WORK  = 1,   /* no kernel, copy or graph launch at all */
	RECORD_NO_GRAPHS    = 2,   /* GPU work, but no CUDA graph launched */
	RECORD_NO_STEPS     = 3,   /* no NVTX range of the step name */
	RECORD_BAD_LOG      = 4,   /* a log that does not read */
	RECORD_NO_MEMORY    = 5,
	RECORD_PLAN_ERROR   = 6,   /* libplan refused what was built */
};

/*
 * Build one plan from the logs of NLOGS processes (one, or a process and
 * the children it forked). On RECORD_OK *OUT holds the plan and SUM (may
 * be NULL) what it holds; otherwise *OUT is NULL and MSG says why.
 */
int record_convert(struct reclog *const *logs, size_t nlogs, const struct record_opts *opts,
                   plan_t **out, struct record_summary *sum, char *msg, size_t msglen);

/* Whether a log holds any GPU work (a kernel, copy, memset or graph
 * launch). */
int record_log_has_work(const struct reclog *log);

#endif /* BCG_RECORD_CONVERT_H */
