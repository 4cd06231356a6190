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

# With Hugging Face transformers (label hf; exit 77, reported as skipped,
# where the python3 on PATH lacks it, as on CI): transformers loads an export
# and its tokenizer, and a GPT-2 transformers saved starts a run. The CUDA
# variants (labels gpu and hf) also need a GPU; import_cuda is GPT-2 124M
# under configs/124M.ini, the README's fine-tuning command.
if(NOT TARGET gpt2_tokenize)
  return() # the tokenizer half of the check needs gpt2_tokenize (PCRE2)
endif()
find_program(PYTHON3_PATH NAMES python3)
set(hf_script ${CMAKE_CURRENT_SOURCE_DIR}/hf/hf_transformers.py)
set(hf_devices cpu)
if(GPT2_HAVE_CUDA)
  list(APPEND hf_devices cuda)
endif()
foreach(device ${hf_devices})
  foreach(mode export import)
    set(name hf_transformers_${mode})
    set(labels hf)
    if(device STREQUAL "cuda")
      set(name ${name}_cuda)
      set(labels "gpu;hf")
    endif()
    add_test(NAME ${name}
             COMMAND ${PYTHON3_PATH} ${hf_script} ${mode} $<TARGET_FILE:gpt2_ddp> $<TARGET_FILE:gpt2_convert>
                     $<TARGET_FILE:gpt2_tokenize> ${CMAKE_CURRENT_BINARY_DIR}/${name} --device ${device})
    set_tests_properties(${name} PROPERTIES LABELS "${labels}" SKIP_RETURN_CODE 77 TIMEOUT 900)
  endforeach()
endforeach()
