# GPU area, attention: the flash attention kernels (kernels/cuda/attention.cu,
# the dispatcher; attention_mma.cu and attention_wgmma.cu, the two kernel
# families, with their headers) against a float64 host reference (label gpu; exits 77, reported
# as skipped, where no GPU is visible), and their benchmark (built, not run as
# a test). With -DGPT2_ATTN_TUNING=ON both also run every tuning variant.
# scripts/build_attention_standalone.sh builds both without CMake (no MPI/HDF5).
if(GPT2_HAVE_CUDA)
  add_executable(test_attention_cuda ${CMAKE_CURRENT_SOURCE_DIR}/test_attention_cuda.cu)
  target_link_libraries(test_attention_cuda PRIVATE room_train)
  add_test(NAME test_attention_cuda COMMAND test_attention_cuda)
  set_tests_properties(test_attention_cuda PROPERTIES LABELS gpu RESOURCE_LOCK gpu SKIP_RETURN_CODE 77 TIMEOUT 600)

  add_executable(bench_attention ${PROJECT_SOURCE_DIR}/bench/bench_attention.cu)
  target_link_libraries(bench_attention PRIVATE room_train)
endif()

# The trainer's attention_deterministic: two runs the same bit for bit on
# Hopper; refused (exit 2) where the mma.sync kernels run.
if(GPT2_HAVE_CUDA)
  add_test(NAME attention_deterministic_cuda
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/attention_deterministic.sh $<TARGET_FILE:gpt2_ddp>
                   ${CMAKE_CURRENT_BINARY_DIR}/attention_deterministic_cuda)
  set_tests_properties(attention_deterministic_cuda PROPERTIES LABELS gpu RESOURCE_LOCK gpu SKIP_RETURN_CODE 77
                                                               TIMEOUT 600)
endif()
