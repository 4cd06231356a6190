# Kernels area: the CPU FP32 reference kernels' unit test (finite-difference
# gradients and exact cases) and the CPU kernel benchmark (built, not run).
gpt2_unit_test(test_kernels_cpu 300 ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_kernels_cpu.c
               ${CMAKE_CURRENT_SOURCE_DIR}/unit/gradcheck.c)

add_executable(bench_cpu_kernels ${PROJECT_SOURCE_DIR}/bench/bench_cpu_kernels.c)
target_link_libraries(bench_cpu_kernels PRIVATE room_train)
target_compile_options(bench_cpu_kernels PRIVATE -Wall -Wextra -Werror)
