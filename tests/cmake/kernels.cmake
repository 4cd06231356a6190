# Kernels area: the CPU FP32 reference kernels' unit test (finite-difference
# gradients and exact cases) and the CPU kernel benchmark (built, not run).
add_executable(test_kernels_cpu
  ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_kernels_cpu.c
  ${CMAKE_CURRENT_SOURCE_DIR}/unit/gradcheck.c)
target_link_libraries(test_kernels_cpu PRIVATE gpt2core)
target_compile_options(test_kernels_cpu PRIVATE -Wall -Wextra -Werror)
add_test(NAME test_kernels_cpu COMMAND test_kernels_cpu)
set_tests_properties(test_kernels_cpu PROPERTIES LABELS unit TIMEOUT 300)

add_executable(bench_cpu_kernels ${PROJECT_SOURCE_DIR}/bench/bench_cpu_kernels.c)
target_link_libraries(bench_cpu_kernels PRIVATE gpt2core)
target_compile_options(bench_cpu_kernels PRIVATE -Wall -Wextra -Werror)
