/* SPDX-License-Identifier: MIT */
/*
 * fork() after the data path started: the child exits cleanly (the parent's endpoint, whose
 * threads did not come along, is left alone), is told plainly that it cannot create QPs, can
 * deregister memory, and the parent goes on working.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <infiniband/verbs.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shim/lo.h"

Test(shim_fork, child_exits_and_parent_goes_on, .timeout = 30)
{
	struct ibv_context *ctx = open_lo();
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	struct ibv_qp *qp = lo_rc_qp(pd, cq), *qp2;
	static char buf[4096];
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	int status;
	pid_t child;

	cr_assert(pd && cq && qp && mr);
	child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		errno = 0;
		/* 2: a QP was created; 3: the error was not ENOTSUP; 4: ibv_dereg_mr failed. */
		if (lo_rc_qp(pd, cq))
			_exit(2);
		if (errno != ENOTSUP)
			_exit(3);
		exit(ibv_dereg_mr(mr) ? 4 : 0); /* exit(), not _exit(): the destructors run */
	}
	cr_assert_eq(waitpid(child, &status, 0), child);
	cr_assert(WIFEXITED(status), "the child did not exit normally");
	cr_assert_eq(WEXITSTATUS(status), 0, "child status %d", WEXITSTATUS(status));
	qp2 = lo_rc_qp(pd, cq);
	cr_assert_not_null(qp2, "the parent still creates QPs");
	cr_assert_eq(ibv_destroy_qp(qp2), 0);
	cr_assert_eq(ibv_destroy_qp(qp), 0);
	cr_assert_eq(ibv_dereg_mr(mr), 0);
}
