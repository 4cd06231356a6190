# Model area: options of the model's orchestration (model/gpt2.c) on the CPU
# backend, where results are exact: recompute_gelu changes memory, not numbers.
add_executable(test_recompute_gelu ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_recompute_gelu.c)
target_link_libraries(test_recompute_gelu PRIVATE gpt2core)
target_compile_options(test_recompute_gelu PRIVATE -Wall -Wextra -Werror)
add_test(NAME test_recompute_gelu COMMAND test_recompute_gelu)
set_tests_properties(test_recompute_gelu PROPERTIES LABELS unit TIMEOUT 120)

# The forward announces every parameter tensor before reading it, in forward
# order: the contract the overlapped ZeRO-1 all-gather relies on.
add_executable(test_params_needed ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_params_needed.c)
target_link_libraries(test_params_needed PRIVATE gpt2core)
target_compile_options(test_params_needed PRIVATE -Wall -Wextra -Werror)
add_test(NAME test_params_needed COMMAND test_params_needed)
set_tests_properties(test_params_needed PROPERTIES LABELS unit TIMEOUT 120)
