# bench/: overhead and throughput benchmarks (make bench).
