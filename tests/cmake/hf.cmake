# Hugging Face interop: the safetensors reader and writer (unit).
if(NOT GPT2_HAVE_HF)
  return() # built without json-c: no Hugging Face files to test
endif()
gpt2_unit_test(test_safetensors 60 ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_safetensors.c)
