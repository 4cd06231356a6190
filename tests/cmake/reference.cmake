# PyTorch parity of the CPU model, loss, gradients and optimizer (Debian's python3-torch).
add_executable(parity_driver ${PROJECT_SOURCE_DIR}/tests/reference/parity_driver.c)
target_link_libraries(parity_driver PRIVATE room_train)
target_compile_options(parity_driver PRIVATE -Wall -Wextra -Werror)
add_test(NAME torch_parity
         COMMAND ${PYTHON3_SYSTEM} ${PROJECT_SOURCE_DIR}/tests/reference/test_torch_parity.py
                 $<TARGET_FILE:parity_driver> ${CMAKE_CURRENT_BINARY_DIR}/torch_parity)
set_tests_properties(torch_parity PROPERTIES LABELS reference TIMEOUT 600)
