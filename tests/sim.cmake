# Deterministic simulation of the transport core (tests/sim/sim.h): unit tests through the
# simulated wire, and the scenario families over many seeds (tests/sim/families.h).
set(_sim ${CMAKE_CURRENT_LIST_DIR}/sim)
add_library(uroce_sim STATIC ${_sim}/sim.c ${_sim}/families.c)
target_link_libraries(uroce_sim PUBLIC uroce_transport)
add_library(uroce_sim_pair STATIC ${_sim}/pair.c)
target_link_libraries(uroce_sim_pair PUBLIC uroce_sim PkgConfig::CRITERION)

foreach(_t rc errors state ucud xrc regress families mw)
  uroce_test(test_sim_${_t} SOURCES ${_sim}/test_sim_${_t}.c LIBS uroce_sim_pair LABELS sim)
endforeach()
