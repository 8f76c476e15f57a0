# Capture tap: unit tests; uroce-demo's command line; and the external
# oracles (tshark, scapy) run on uroce-demo's capture and on the reference
# vectors. tshark and scapy are required: a missing one fails its test.
uroce_test(test_pcap SOURCES test_pcap.c LIBS uroce_fabric Threads::Threads LABELS pcap)

# scapy 2.5 (python3-scapy) is installed for the system interpreter only.
set(UROCE_ORACLE_PYTHON /usr/bin/python3 CACHE FILEPATH "Python with scapy, for the oracle tests")
set(oracle_dir ${CMAKE_CURRENT_SOURCE_DIR}/oracle)

add_test(NAME demo_cli COMMAND ${UROCE_ORACLE_PYTHON} ${oracle_dir}/demo_cli.py
                               $<TARGET_FILE:uroce-demo>)
add_test(NAME oracle_demo_tshark COMMAND ${UROCE_ORACLE_PYTHON} ${oracle_dir}/demo_tshark.py
                                         $<TARGET_FILE:uroce-demo>)
add_test(NAME oracle_demo_icrc COMMAND ${UROCE_ORACLE_PYTHON} ${oracle_dir}/demo_icrc.py
                                       $<TARGET_FILE:uroce-demo>)
add_test(NAME oracle_vectors_icrc COMMAND ${UROCE_ORACLE_PYTHON} ${oracle_dir}/vectors_icrc.py
                                          ${CMAKE_CURRENT_SOURCE_DIR}/vectors)
# No __pycache__ in the source tree.
set_tests_properties(demo_cli oracle_demo_tshark oracle_demo_icrc oracle_vectors_icrc
                     PROPERTIES TIMEOUT 120 ENVIRONMENT PYTHONDONTWRITEBYTECODE=1)
set_tests_properties(demo_cli PROPERTIES LABELS "pcap")
set_tests_properties(oracle_demo_tshark oracle_demo_icrc oracle_vectors_icrc
                     PROPERTIES LABELS "oracle;pcap")

# A capture records each frame before any frame answering it: the client's capture of every RC
# operation on an rdma_cm connection, five times (shim/capture-order.sh, oracle/capture_order.py).
add_test(NAME pcap_capture_order
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/shim/capture-order.sh ${UROCE_ORACLE_PYTHON}
          ${CMAKE_BINARY_DIR}/bin "${UROCE_SANITIZE}" 28855 18855)
set_tests_properties(pcap_capture_order PROPERTIES LABELS "pcap;integration" TIMEOUT 120
                     SKIP_RETURN_CODE 77)
