# Launching: rank 0's environment report and the launches the trainer
# refuses (a launcher/MPI mismatch, a backend not built, fewer GPUs than ranks).
add_test(NAME ddp_environment COMMAND ${PROJECT_SOURCE_DIR}/tests/integration/ddp_environment.sh
                                      $<TARGET_FILE:gpt2_ddp> ${CMAKE_CURRENT_BINARY_DIR}/ddp_environment)
set_tests_properties(ddp_environment PROPERTIES LABELS integration TIMEOUT 300 RUN_SERIAL TRUE)

# launch/local.sh runs the demo as it is on 1, 3, 4 and 8 ranks.
add_test(NAME launch_local COMMAND ${PROJECT_SOURCE_DIR}/tests/integration/launch_local.sh
                                   $<TARGET_FILE:gpt2_ddp> ${CMAKE_CURRENT_BINARY_DIR}/launch_local)
set_tests_properties(launch_local PROPERTIES LABELS integration TIMEOUT 300 RUN_SERIAL TRUE)
