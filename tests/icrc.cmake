# IP/UDP header model, ICRC (with IPv4 ID recovery) and frame builder.
uroce_test(test_ipudp SOURCES test_ipudp.c
           LIBS uroce_transport uroce_test_support PkgConfig::LIBPCAP LABELS icrc)
# zlib: the test's own reference ICRC (PROTOCOL.md §2.3), whatever UROCE_CRC32 is.
uroce_test(test_icrc SOURCES test_icrc.c
           LIBS uroce_transport uroce_test_support PkgConfig::LIBPCAP PkgConfig::ZLIB LABELS icrc)
target_compile_definitions(test_icrc PRIVATE UROCE_CRC32_NAME="${UROCE_CRC32}")
