# pcap-samples/: the checked-in reference captures decode in tshark with no malformed frame,
# every ICRC verifies (scapy and the reference oracle) and each shows what pcap-samples/README.md
# says it shows (oracle/pcap_samples.py); and make-samples.sh regenerates them all, on ports of
# this test's own (UDP 28800, TCP 18800..18808), checked the same way.
add_test(NAME pcap_samples
  COMMAND ${UROCE_ORACLE_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/oracle/pcap_samples.py
          ${PROJECT_SOURCE_DIR}/pcap-samples)
add_test(NAME pcap_samples_regen
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/pcap-samples/regen.sh ${UROCE_ORACLE_PYTHON}
          ${PROJECT_SOURCE_DIR}/pcap-samples/make-samples.sh ${CMAKE_BINARY_DIR}/bin
          "${UROCE_SANITIZE}" 28800 18800)
set_tests_properties(pcap_samples pcap_samples_regen PROPERTIES LABELS "pcap;integration"
                     TIMEOUT 120 SKIP_RETURN_CODE 77 ENVIRONMENT PYTHONDONTWRITEBYTECODE=1)
