# Seed 004's plan, as a kernel lab suite: a 1 ms periodic task under a
# network flood and periodic messaging bursts, on each kernel it is booted
# with. docs/kernels.md compares a standard and a PREEMPT_RT kernel with it:
#
#   bench/kernel-lab/lab --kernel linux-image-amd64    --suite bench/kernel-lab/seed-004.sh --out lab/std
#   bench/kernel-lab/lab --kernel linux-image-rt-amd64 --suite bench/kernel-lab/seed-004.sh --out lab/rt
#   rtscope compare lab/std/seed.json lab/rt/seed.json --html compare.html
lab_run check 60 check --json check.json
lab_run seed 120 cyclic -i 1ms -D 20s --load messaging --load net --json seed.json
