# A short program of our own in pyverbs, rdma-core's Python bindings, run by Debian's
# /usr/bin/python3 through uroce-run: open uroce_lo, register memory, create a CQ and two RC
# QPs, move both through RESET -> INIT -> RTR -> RTS (checked with ibv_query_qp), SEND 64
# bytes from one to the other and RDMA WRITE 4 KiB back, and check the bytes and completions.
import sys
import time

import pyverbs.enums as e
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR

IPV4_LO = "0000:0000:0000:0000:0000:ffff:7f00:0001"
ACCESS = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE


def state(qp):
    attr, _ = qp.query(e.IBV_QP_STATE)
    return attr.qp_state


def connect(ctx, qp, dqpn, gid_index):
    attr = QPAttr(qp_state=e.IBV_QPS_INIT)
    attr.pkey_index = 0
    attr.port_num = 1
    attr.qp_access_flags = ACCESS
    qp.to_init(attr)
    assert state(qp) == e.IBV_QPS_INIT, state(qp)
    gr = GlobalRoute(dgid=ctx.query_gid(1, gid_index), sgid_index=gid_index)
    attr = QPAttr(qp_state=e.IBV_QPS_RTR)
    attr.ah_attr = AHAttr(gr=gr, is_global=1, port_num=1)
    attr.path_mtu = e.IBV_MTU_1024
    attr.dest_qp_num = dqpn
    attr.rq_psn = 0
    attr.max_dest_rd_atomic = 1
    attr.min_rnr_timer = 12
    qp.to_rtr(attr)
    assert state(qp) == e.IBV_QPS_RTR, state(qp)
    attr = QPAttr(qp_state=e.IBV_QPS_RTS)
    attr.sq_psn = 0
    attr.timeout = 14
    attr.retry_cnt = 7
    attr.rnr_retry = 7
    attr.max_rd_atomic = 1
    qp.to_rts(attr)
    assert state(qp) == e.IBV_QPS_RTS, state(qp)


def wait(cq):
    end = time.monotonic() + 10
    while time.monotonic() < end:
        n, wcs = cq.poll()
        if n:
            assert wcs[0].status == e.IBV_WC_SUCCESS, wcs[0]
            return wcs[0]
    sys.exit("no completion within 10 s")


with Context(name="uroce_lo") as ctx:
    port = ctx.query_port(1)
    gids = [str(ctx.query_gid(1, i)) for i in range(port.gid_tbl_len)]
    gid_index = gids.index(IPV4_LO)
    pd = PD(ctx)
    cq = CQ(ctx, 16)
    mrs = [MR(pd, 8192, ACCESS) for _ in range(2)]
    cap = QPCap(max_send_wr=4, max_recv_wr=4, max_send_sge=1, max_recv_sge=1)
    qps = [QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap)) for _ in range(2)]
    assert all(state(qp) == e.IBV_QPS_RESET for qp in qps)
    connect(ctx, qps[0], qps[1].qp_num, gid_index)
    connect(ctx, qps[1], qps[0].qp_num, gid_index)

    message = bytes(range(64))
    mrs[0].write(message, len(message))
    qps[1].post_recv(RecvWR(wr_id=2, num_sge=1, sg=[SGE(mrs[1].buf, 64, mrs[1].lkey)]))
    qps[0].post_send(SendWR(wr_id=1, opcode=e.IBV_WR_SEND, num_sge=1,
                            sg=[SGE(mrs[0].buf, 64, mrs[0].lkey)]))
    # The send and the receive complete on the one CQ, in either order.
    assert {wait(cq).wr_id, wait(cq).wr_id} == {1, 2}
    assert mrs[1].read(64, 0) == message

    block = bytes((i * 7) & 0xFF for i in range(4096))
    mrs[1].write(block, len(block))
    wr = SendWR(wr_id=3, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1,
                sg=[SGE(mrs[1].buf, 4096, mrs[1].lkey)])
    wr.set_wr_rdma(mrs[0].rkey, mrs[0].buf + 4096)
    qps[1].post_send(wr)
    assert wait(cq).wr_id == 3
    assert mrs[0].read(4096, 4096) == block
    print(f"pyverbs: RC QPs {qps[0].qp_num:#x} and {qps[1].qp_num:#x} through RESET, INIT, RTR, "
          "RTS; SEND 64 B and RDMA WRITE 4 KiB verified")
