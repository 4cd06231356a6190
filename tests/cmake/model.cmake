# Model area: options of the model's orchestration (model/gpt2.c) on the CPU
# backend, where results are exact: recompute_gelu changes memory, not numbers.
gpt2_unit_test(test_recompute_gelu 120 ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_recompute_gelu.c)

# The forward announces every parameter tensor before reading it, in forward
# order: the contract the overlapped ZeRO-1 all-gather relies on.
gpt2_unit_test(test_params_needed 120 ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_params_needed.c)
