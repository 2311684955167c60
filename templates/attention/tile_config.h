// The host's name for the attention kernels' tile configuration: the
// runtime, the tools and the tests include this with the host compiler.
// The rules live in tile_config.cuh, the header the kernels include: only
// templates/**/*.cuh are embedded for NVRTC, so the one definition must
// sit there to reach both sides.
#pragma once

#include "tile_config.cuh"
