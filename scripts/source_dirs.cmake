# The folders whose .c, .h and .proto files make the tenet libraries and program (read by
# CMakeLists.txt and scripts/source_digest.cmake, so that both name the same files).
set(TENET_SOURCE_DIRS algo cli common dims emit forest greedy lp milp sim synth ten topo
    trees workload)
