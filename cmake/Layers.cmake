# SPDX-License-Identifier: Apache-2.0
# The layers of src/ and which layers each one sees (its own, and these):
# src/CMakeLists.txt builds each with exactly that include path, and ctest
# build.layering checks every pair. ../shared/design/ARCHITECTURE.md §4.
set(OHC_LAYERS util runtime core transport algo zerocopy comm api profiler
  sim)
set(OHC_SEES_util)
set(OHC_SEES_runtime util)
set(OHC_SEES_core util)
set(OHC_SEES_transport util runtime core)
set(OHC_SEES_algo util core)
set(OHC_SEES_zerocopy util runtime core)
set(OHC_SEES_comm util runtime core transport algo zerocopy)
set(OHC_SEES_api util runtime core transport algo zerocopy comm)
set(OHC_SEES_profiler util runtime)
set(OHC_SEES_sim util core algo)
