# sim/: the CPU backend (DESIGN.md section 7).
