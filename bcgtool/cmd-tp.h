/*
 * cmd-tp.h - what the commands that take --tp N share: the option's
 * checks, the shards of a script (one per rank, its errors at the
 * script's positions), and dist_run's options for the backend.
 */
#ifndef BCG_CMD_TP_H
#define BCG_CMD_TP_H

#include <stdint.h>

#include "cmd.h"
#include "dist/dist.h"
#include "script/script.h"

#define CMD_TP_MAX 64              /* the most ranks --tp takes */
#define CMD_TP_TIMEOUT 60.0        /* --timeout's default, seconds */

/* --tp ARG: a world of 1 .. CMD_TP_MAX ranks; --timeout ARG: seconds > 0.
 * 0, or -1 after a usage error. */
int cmd_tp_parse(const struct cmd_entry *self, const char *arg, int *world);
int cmd_tp_parse_timeout(const struct cmd_entry *self, const char *arg, double *timeout_s);

/* --nccl-mem ARG: "default" or "symmetric" (enum dist_nccl_mem). 0, or -1
 * after a usage error. */
int cmd_tp_parse_nccl_mem(const struct cmd_entry *self, const char *arg, int *mem);

/* --nccl-mem MEM for WORLD ranks on BACKEND (what cmd_tp_opts returned;
 * NULL before it is known), into O->nccl_mem (O may be NULL). Symmetric
 * memory with one rank is a usage error (exit 2); on the host backend a
 * no-op, said in a note (its ranks have no NCCL); on cuda it needs NCCL
 * 2.27 or later, else an error naming the version (exit 3; 2 for a build
 * without NCCL). Returns 0, or that exit status with the error printed. */
int cmd_tp_nccl_mem(const struct cmd_entry *self, int mem, int world, const char *backend,
                    struct dist_opts *o);

/* Whether every rank of WORLD can run S (PATH names it): the sharding
 * pass for each, its first error printed at the script's position. 0, or
 * BCG_EXIT_USAGE. */
int cmd_tp_check(const struct script *s, const char *path, int world);

/* Rank RANK's program of S into *OUT (owned), or an exit status with the
 * error printed. */
int cmd_tp_shard(const struct script *s, const char *path, int world, int rank, plan_t **out);

/* dist_run's options for BACKEND ("host": threads; otherwise processes;
 * "auto": processes when there are GPUs, else threads). Returns the
 * backend the ranks open: BACKEND, or "host" for "auto" without GPUs. */
const char *cmd_tp_opts(struct dist_opts *o, const char *what, const char *backend, int world,
                        double timeout_s);

struct engine_error;

/* engine_report(ERR, PROGRAM, PATH), "rank R: " first when COMM is a rank
 * of several. */
void cmd_tp_report(struct engine_error *err, const plan_t *program, const char *path,
                   const struct dist_comm *comm);

/* "rank R: " (world > 1) or "", for the messages of a rank. */
const char *cmd_tp_prefix(const struct dist_comm *comm, char *buf, size_t len);

#endif /* BCG_CMD_TP_H */
