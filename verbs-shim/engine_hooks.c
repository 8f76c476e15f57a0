// SPDX-License-Identifier: MIT
/*
 * The engine hooks (engine.h) while no engine is linked in: queued WQEs wait, and only the
 * control path (state changes, flushes, completions it generates) runs. The data path
 * replaces this file.
 */
#include "verbs-shim/engine.h"

void uroce_qp_kick(struct uroce_qp *qp)
{
	(void)qp;
}

void uroce_qp_modified(struct uroce_qp *qp, enum ibv_qp_state old, int attr_mask)
{
	(void)qp;
	(void)old;
	(void)attr_mask;
}

void uroce_qp_destroying(struct uroce_qp *qp)
{
	(void)qp;
}
