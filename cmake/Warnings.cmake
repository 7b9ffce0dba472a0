# SPDX-License-Identifier: Apache-2.0
set(OHC_C_WARNINGS -Wall -Wextra -Wshadow -Wstrict-prototypes
    -Wmissing-prototypes -Wformat=2 -Wwrite-strings -Wno-format-nonliteral)
if(OHC_WERROR)
  list(APPEND OHC_C_WARNINGS -Werror)
endif()
