# Seed 004's plan, as a kernel lab suite: a 1 ms periodic task (3 runs of 20 s,
# pooled) under a network flood and messaging load, on each kernel it is booted
# with. docs/kernels.md compares a standard and a PREEMPT_RT kernel with it:
#
#   bench/kernel-lab/lab --kernel linux-image-amd64    --suite bench/kernel-lab/seed-004.sh --out lab/std
#   bench/kernel-lab/lab --kernel linux-image-rt-amd64 --suite bench/kernel-lab/seed-004.sh --out lab/rt
#   rtscope compare lab/std/seed.json lab/rt/seed.json --html compare.html
lab_run check 60 check --json check.json
lab_run seed 300 cyclic -i 1ms -D 20s --repeat 3 --load messaging --load net --json seed.json
