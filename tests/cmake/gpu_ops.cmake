# GPU area, the kernel table: every op of ops_cuda against the CPU reference
# table (test_ops_cuda), and one forward+backward of a tiny GPT-2 on both
# backends (gpu_model_step), and the ops' benchmark (bench_ops_cuda). Label gpu; both exit 77, reported as skipped,
# where no GPU is visible. bench/run_gpu_checks.sh builds and runs them.
if(GPT2_HAVE_CUDA)
  foreach(t test_ops_cuda test_model_cuda)
    add_executable(${t} ${CMAKE_CURRENT_SOURCE_DIR}/gpu/${t}.c)
    target_link_libraries(${t} PRIVATE room_train)
    target_compile_options(${t} PRIVATE -Wall -Wextra -Werror)
  endforeach()
  add_test(NAME test_ops_cuda COMMAND test_ops_cuda)
  add_test(NAME gpu_model_step COMMAND test_model_cuda)
  set_tests_properties(test_ops_cuda gpu_model_step PROPERTIES
    LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 900)

  # the ops at GPT-2 124M shapes, one line each (built, not run as a test)
  add_executable(bench_ops_cuda ${PROJECT_SOURCE_DIR}/bench/bench_ops_cuda.cu)
  target_link_libraries(bench_ops_cuda PRIVATE room_train)
endif()
