# fabric/net transmit paths owned by the endpoint: packet trains over UDP GSO. UDP ports
# 24870..24879.
uroce_test(test_net_train SOURCES test_net_train.c LIBS uroce_fabric LABELS fabric)
uroce_test(test_net_faults SOURCES test_net_faults.c LIBS uroce_fabric LABELS fabric)
