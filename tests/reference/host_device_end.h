// Ends a host_device.h section: later code sees the normal meanings again.
#undef __device__
#undef __host__
#undef __forceinline__
