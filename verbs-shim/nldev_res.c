// SPDX-License-Identifier: MIT
/*
 * RDMA netlink's resource commands (nldev.h) for the objects of the processes the caller lists
 * (struct uroce_nldev_view, from the registry of resreg.h): RDMA_NLDEV_CMD_RES_GET, each
 * device's summary (nldev_res_get_doit/_dumpit, fill_res_info), and RDMA_NLDEV_CMD_RES_QP_GET,
 * its QPs (res_get_common_doit/_dumpit with fill_res_qp_entry), as Linux 6.1's
 * drivers/infiniband/core/nldev.c answers them.
 */
#include <errno.h>

#include "verbs-shim/nldev_int.h"

/* fill_res_info(): the handle and a summary table, one entry per kind of object. */
static void fill_res_info(struct nlb *b, const struct uroce_nldev_view *v, size_t pos)
{
	static const char *const names[UROCE_RES_NUM] = {
		[UROCE_RES_PD] = "pd",       [UROCE_RES_CQ] = "cq", [UROCE_RES_QP] = "qp",
		[UROCE_RES_CM_ID] = "cm_id", [UROCE_RES_MR] = "mr", [UROCE_RES_CTX] = "ctx",
		[UROCE_RES_SRQ] = "srq",
	};
	size_t table, entry;

	nldev_fill_handle(b, &v->sys->devs[pos]);
	table = nlb_nest_start(b, RDMA_NLDEV_ATTR_RES_SUMMARY);
	for (int i = 0; i < UROCE_RES_NUM; i++) {
		entry = nlb_nest_start(b, RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY);
		nlb_put_str(b, RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME, names[i]);
		nlb_put_u64(b, RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR, v->res ? v->res[pos][i] : 0);
		nlb_nest_end(b, entry);
	}
	nlb_nest_end(b, table);
}

/* nldev_res_get_doit() */
int nldev_res_doit(struct nldev_answer *an)
{
	const struct nlattr *tb[RDMA_NLDEV_ATTR_MAX];
	size_t pos;

	if (nldev_parse_req(an, false, tb) || !tb[RDMA_NLDEV_ATTR_DEV_INDEX])
		return -EINVAL;
	if (!nldev_dev_by_index(an->v, nla_get_u32_(tb[RDMA_NLDEV_ATTR_DEV_INDEX]), &pos))
		return -EINVAL;
	REPLY(an, RDMA_NLDEV_CMD_RES_GET, fill_res_info(b, an->v, pos));
	return 0;
}

/* nldev_res_get_dumpit(): every device's summary. */
int nldev_res_dump(struct nldev_answer *an)
{
	DUMP_EACH(an, RDMA_NLDEV_CMD_RES_GET, fill_res_info(b, an->v, pos));
	return nldev_dump_done(an, 0);
}

/*
 * fill_res_qp_entry() and fill_res_qp_entry_query() of a user QP: the port once one was set,
 * the number, the PD's number (an XRC target has no PD), the process; then the remote QP and
 * the receive PSN for RC and UC, the send PSN, the migration state for RC, UC and XRC, the type
 * and the state (ib_query_qp()'s: uroce's ibv_query_qp attributes).
 */
static void fill_res_qp_entry(struct nlb *b, const struct uroce_nldev_qp *e)
{
	const struct uroce_res_qp *q = &e->qp;
	bool connected = q->type == IBV_QPT_RC || q->type == IBV_QPT_UC;

	if (q->port)
		nlb_put_u32(b, RDMA_NLDEV_ATTR_PORT_INDEX, q->port);
	nlb_put_u32(b, RDMA_NLDEV_ATTR_RES_LQPN, q->lqpn);
	if (q->has_pd)
		nlb_put_u32(b, RDMA_NLDEV_ATTR_RES_PDN, q->pdn);
	nlb_put_u32(b, RDMA_NLDEV_ATTR_RES_PID, e->pid);
	if (connected) {
		nlb_put_u32(b, RDMA_NLDEV_ATTR_RES_RQPN, q->rqpn);
		nlb_put_u32(b, RDMA_NLDEV_ATTR_RES_RQ_PSN, q->rq_psn);
	}
	nlb_put_u32(b, RDMA_NLDEV_ATTR_RES_SQ_PSN, q->sq_psn);
	if (connected || q->type == IBV_QPT_XRC_SEND || q->type == IBV_QPT_XRC_RECV)
		nlb_put_u8(b, RDMA_NLDEV_ATTR_RES_PATH_MIG_STATE, q->mig);
	nlb_put_u8(b, RDMA_NLDEV_ATTR_RES_TYPE, q->type);
	nlb_put_u8(b, RDMA_NLDEV_ATTR_RES_STATE, q->state);
}

/* The QPs of the device at @pos: v->qps[*first .. *last). */
static void qps_of(const struct uroce_nldev_view *v, size_t pos, size_t *first, size_t *last)
{
	size_t i = 0;

	while (i < v->nqps && v->qps[i].dev < pos)
		i++;
	*first = i;
	while (i < v->nqps && v->qps[i].dev == pos)
		i++;
	*last = i;
}

/*
 * The device and port a request for QPs names: the device's position in *pos and the port
 * (0: none) in *port. Returns 0 or -EINVAL: no or an unknown device index, an invalid port
 * (rdma_is_port_valid()).
 */
static int qp_target(struct nldev_answer *an, const struct nlattr **tb, size_t *pos, uint32_t *port)
{
	if (!tb[RDMA_NLDEV_ATTR_DEV_INDEX] ||
	    !nldev_dev_by_index(an->v, nla_get_u32_(tb[RDMA_NLDEV_ATTR_DEV_INDEX]), pos))
		return -EINVAL;
	*port = tb[RDMA_NLDEV_ATTR_PORT_INDEX] ? nla_get_u32_(tb[RDMA_NLDEV_ATTR_PORT_INDEX]) : 0;
	if (tb[RDMA_NLDEV_ATTR_PORT_INDEX] && *port != UROCE_PORT_NUM)
		return -EINVAL;
	return 0;
}

/*
 * res_get_common_doit() for a QP: the device, the port (a QP is a port's object: the kernel's
 * fill_entries[] does not mark it NLDEV_PER_DEV, so a request without a port is EINVAL) and
 * RDMA_NLDEV_ATTR_RES_LQPN; ENOENT for a number no QP of the device has
 * (rdma_restrack_get_byid()), EAGAIN for a QP of another port or none yet (fill_res_qp_entry()).
 * The reply holds the handle and the entry's attributes, not nested.
 */
int nldev_res_qp_doit(struct nldev_answer *an)
{
	const struct nlattr *tb[RDMA_NLDEV_ATTR_MAX];
	const struct uroce_nldev_qp *e = NULL;
	size_t pos, first, last;
	uint32_t port, lqpn;
	int err;

	if (nldev_parse_req(an, false, tb) || !tb[RDMA_NLDEV_ATTR_RES_LQPN])
		return -EINVAL;
	err = qp_target(an, tb, &pos, &port);
	if (err)
		return err;
	if (!port)
		return -EINVAL;
	lqpn = nla_get_u32_(tb[RDMA_NLDEV_ATTR_RES_LQPN]);
	qps_of(an->v, pos, &first, &last);
	for (size_t i = first; i < last && !e; i++)
		if (an->v->qps[i].qp.lqpn == lqpn)
			e = &an->v->qps[i];
	if (!e)
		return -ENOENT;
	if (e->qp.port != port)
		return -EAGAIN;
	REPLY(an, RDMA_NLDEV_CMD_RES_QP_GET, {
		nldev_fill_handle(b, &an->v->sys->devs[pos]);
		fill_res_qp_entry(b, e);
	});
	return 0;
}

/*
 * res_get_common_dumpit() for QPs: the device the request names (EINVAL in NLMSG_DONE without
 * one, or for an unknown device or invalid port), then messages of the handle and a table of
 * entries, as many as one datagram holds, each dump round's message in a datagram of its own.
 * With a port, the QPs of other ports (or none yet) are left out; a round that looked at a QP
 * sends its message even if that left it empty, as the kernel's; a device without QPs answers
 * NLMSG_DONE alone.
 */
int nldev_res_qp_dump(struct nldev_answer *an)
{
	const struct nlattr *tb[RDMA_NLDEV_ATTR_MAX];
	size_t pos, first, last, i;
	uint32_t port;

	if (nldev_parse_req(an, false, tb))
		return nldev_dump_done(an, -EINVAL);
	if (qp_target(an, tb, &pos, &port))
		return nldev_dump_done(an, -EINVAL);
	qps_of(an->v, pos, &first, &last);
	for (i = first; i < last;) {
		uint8_t buf[NLDEV_GOODSIZE];
		struct nlb b = {buf, sizeof(buf), 0, 0, false};
		size_t table, entry, added = 0;

		nlb_start(&b, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_RES_QP_GET),
			  NLM_F_MULTI, an->req->nlmsg_seq, an->s->portid);
		nldev_fill_handle(&b, &an->v->sys->devs[pos]);
		table = nlb_nest_start(&b, RDMA_NLDEV_ATTR_RES_QP);
		for (; i < last; i++) {
			if (port && an->v->qps[i].qp.port != port)
				continue;
			entry = nlb_nest_start(&b, RDMA_NLDEV_ATTR_RES_QP_ENTRY);
			fill_res_qp_entry(&b, &an->v->qps[i]);
			nlb_nest_end(&b, entry);
			if (b.full) { /* nla_nest_cancel(): the next round starts with it */
				b.len = entry;
				b.full = false;
				break;
			}
			added++;
		}
		if (!added && i < last)
			i++; /* an entry no datagram holds: left out rather than tried for ever */
		nlb_nest_end(&b, table);
		nlb_end(&b);
		nldev_dump_add(an, &b);
	}
	return nldev_dump_done(an, 0);
}
