# transport/wire: opcode table, decoder and encoder (PROTOCOL.md §1), against the
# reference vectors, the hardware CNP and the kernel rxe captures in tests/vectors.
uroce_test(test_wire SOURCES test_wire.c
           LIBS uroce_transport uroce_test_support PkgConfig::LIBPCAP LABELS wire)

# transport/qp_state: the ibv_modify_qp transition table of each QP type.
uroce_test(test_qp_state SOURCES test_qp_state.c LIBS uroce_transport LABELS wire)

# transport/wr_opcode: the work-request opcode table against the packet opcode table and IBA.
uroce_test(test_wr_opcode SOURCES test_wr_opcode.c LIBS uroce_transport LABELS wire)

# transport/place: a WRITE's payload stored as DMA does, each byte once and in order.
uroce_test(test_place SOURCES test_place.c LIBS uroce_transport LABELS wire)
