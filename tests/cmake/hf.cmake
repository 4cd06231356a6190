# Hugging Face interop: the safetensors reader and writer (unit).
if(NOT GPT2_HAVE_HF)
  return() # built without json-c: no Hugging Face files to test
endif()
gpt2_unit_test(test_safetensors 60 ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_safetensors.c)

# Export, import and bad inputs on the CPU backend (tests/integration/hf_*.sh):
# a safetensors reader written from the format's specification and PyTorch
# (Debian's python3-torch) are the oracles.
foreach(t hf_interchange hf_bad_inputs)
  add_test(NAME ${t} COMMAND ${PROJECT_SOURCE_DIR}/tests/integration/${t}.sh
                             $<TARGET_FILE:gpt2_ddp> $<TARGET_FILE:gpt2_convert> ${CMAKE_CURRENT_BINARY_DIR}/${t})
  set_tests_properties(${t} PROPERTIES LABELS integration TIMEOUT 600)
endforeach()
