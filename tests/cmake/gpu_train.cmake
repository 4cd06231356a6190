# GPU area, training: the CUDA trainer's loss curve against PyTorch (bf16
# autocast, same initial weights and batches, 200 steps, within 1% at every
# step). Label gpu; exits 77, reported as skipped, without a GPU or torch.
# Its CPU twin (fp32 trainer against float64 PyTorch, 1e-4), which also
# checks the test's own reimplementation of the loader's sample order, runs
# everywhere with the reference tests.
set(loss_curve ${CMAKE_CURRENT_SOURCE_DIR}/gpu/test_loss_curve_cuda.sh)
add_test(NAME loss_curve_cpu
         COMMAND ${loss_curve} $<TARGET_FILE:gpt2_ddp> ${CMAKE_CURRENT_BINARY_DIR}/loss_curve_cpu --device cpu)
set_tests_properties(loss_curve_cpu PROPERTIES LABELS reference SKIP_RETURN_CODE 77 TIMEOUT 600)
if(GPT2_HAVE_CUDA)
  add_test(NAME loss_curve_cuda
           COMMAND ${loss_curve} $<TARGET_FILE:gpt2_ddp> ${CMAKE_CURRENT_BINARY_DIR}/loss_curve_cuda --device cuda)
  set_tests_properties(loss_curve_cuda PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 600)
endif()
