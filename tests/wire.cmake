# transport/wire: opcode table, decoder and encoder (PROTOCOL.md §1), against the
# reference vectors, the hardware CNP and the kernel rxe captures in tests/vectors.
uroce_test(test_wire SOURCES test_wire.c
           LIBS uroce_transport uroce_test_support PkgConfig::LIBPCAP LABELS wire)
