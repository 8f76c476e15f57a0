# cm/wire: the CM MAD codec, against the reference frames and the kernel's rdma_cm captures.
uroce_test(test_cm_wire SOURCES test_cm_wire.c LIBS uroce_cm uroce_test_support LABELS cm)
# cm/ib_cm: one connection's state machine in virtual time, over a lossy wire.
uroce_test(test_cm_conn SOURCES test_cm_conn.c LIBS uroce_cm LABELS cm)
# cm/route: routing of CM MADs on a host, and the host's answers for MADs nobody takes.
uroce_test(test_cm_route SOURCES test_cm_route.c LIBS uroce_cm uroce_test_support LABELS cm)
# The Starting PSN read as Linux reads it, proven on the kernel-rxe capture's REQ, REP and data.
uroce_test(test_cm_psn SOURCES test_cm_psn.c LIBS uroce_cm uroce_test_support LABELS cm)
