# GPU area, run safety (issue 13): the memory pre-flight, the non-finite
# guard on the CUDA backend, and pre-emption through launch/local.sh with
# this machine's mpirun. Label gpu; exit 77 (skipped) without a GPU.
if(GPT2_HAVE_CUDA)
  foreach(mode preflight nonfinite preempt)
    add_test(NAME safety_${mode}_cuda
             COMMAND ${PROJECT_SOURCE_DIR}/tests/gpu/safety_gpu.sh ${mode} $<TARGET_FILE:gpt2_ddp>
                     ${CMAKE_CURRENT_BINARY_DIR}/safety_${mode}_cuda)
    set_tests_properties(safety_${mode}_cuda PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 600
                                                        RUN_SERIAL TRUE)
  endforeach()
endif()
