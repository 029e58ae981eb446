# The kernel lab's default suite: sourced by the guest's init (bench/kernel-lab/init)
# with /out as the working directory. Each lab_run names a command, its time
# limit in seconds, and rtscope's arguments; bench/kernel-lab/verify checks the
# results on the host. Runs are short: under TCG emulation every figure is the
# emulator's; what counts is that every code path ran on this kernel.
arch=$(uname -m)
ncpu=$(grep -c ^processor /proc/cpuinfo)

# The readiness audit: PREEMPT_RT, the virtual machine, tracefs, ...
lab_run check 60 check --json check.json --fix-script fix.sh

# Periodic wake-ups, untraced and split into kernel stages (in the guest
# kernel's own event formats; the accuracy check against the kernel's own
# bound must pass), and what ran around the late ones.
lab_run cyclic 60 cyclic -D 3s -i 1ms --json cyclic.json
lab_run cyclic-trace 90 cyclic -D 3s -i 1ms --trace --json cyclic-trace.json
lab_run cyclic-outliers 90 cyclic -D 3s -i 1ms --trace-outliers 100us --json cyclic-outliers.json
# Real-time threads on every CPU at a period no machine serves: the run must
# still end on time by itself (and say that it dropped or missed most).
lab_run cyclic-overload 60 cyclic -D 2s -i 10us -t "$ncpu" -q --json cyclic-overload.json

# Interrupt to task: the hrtimer path with stages, the loopback network path,
# the RTC's periodic interrupts through /dev/rtc0 (a CMOS RTC on x86, the
# PL031 on ARM's virt machine), GPIO edges where the machine has a chip whose
# line 3 is the power button (arm64 virt: the host presses it through QMP).
lab_run irq-timer 90 irq --source timer -D 3s --json irq-timer.json
lab_run irq-net 60 irq --source net --rate 500 -D 3s --json irq-net.json
# The RTC at its default 1024 Hz, twice: at the end of such a run a real-time
# reader once wedged the PREEMPT_RT guest in RTC_PIE_OFF (docs/kernels.md).
if [ -e /dev/rtc0 ]; then
  lab_run irq-rtc 60 irq --source rtc -D 3s --json irq-rtc.json
  lab_run irq-rtc-again 60 irq --source rtc -D 3s --json irq-rtc-again.json
fi
# On armhf's armmp kernel gpio-keys (built in) holds line 3 as "GPIO Key
# Poweroff": the edges are measured on arm64 only.
if [ "$arch" = aarch64 ] && [ -e /dev/gpiochip0 ]; then
  lab_qmp powerdown start 10
  sleep 1
  lab_run irq-gpio 60 irq --source gpio:/dev/gpiochip0:3 --edge both -D 4s --json irq-gpio.json
  lab_qmp powerdown stop
fi

# Sleep error of every wait API, clock read costs (cntvct, perf cycles and the
# PMU on ARM, TSC on x86), OS noise, IPC handoffs.
lab_run timer 120 timer --api all --delays 100us,1ms -l 20 --no-calibrate --json timer.json
lab_run clock-list 30 clock --list
lab_run clock 90 clock -n 20000 --calibrate 200ms --warp 50ms --json clock.json
# The PMU's cycle counter read from user space (perf-cycles) where the kernel
# lets it be turned on (arm64: kernel.perf_user_access, Linux 5.17+).
if [ -w /proc/sys/kernel/perf_user_access ]; then
  echo 1 >/proc/sys/kernel/perf_user_access
  lab_run clock-pmu 60 clock -s perf-cycles,cntvct -n 20000 --json clock-pmu.json
  echo 0 >/proc/sys/kernel/perf_user_access
fi
lab_run noise 60 noise -D 2s --json noise.json

# Hardware latency: the kernel's hwlat tracer where the kernel has it (the RT
# kernels), the user-space method where not (the standard one), on CPU 1 while
# the host stops the whole guest (qemu SIGSTOPped: a stall no guest code sees
# coming) five times, 1.7 s apart, for 150 ms (600 ms on ARM, where the
# emulator's own stalls reach 300 ms), and on x86 sends five NMIs (QMP
# inject-nmi; arm's virt machine has none): verify finds them in the samples.
# A stall while the tracer sleeps (window - width) or while the busy loop is
# throttled is not seen, hence a wide width and five stalls. tracefs is read (mounted aside, then unmounted: rtscope mounts its
# own) before and after each run: it must be as it was, after a run that
# ends and, where the tracer runs, after one stopped by SIGINT or SIGTERM and
# one refused because another tracer is in use.
hwlat_snapshot() {
  mkdir -p /tmp/tracefs-look
  mount -t tracefs nodev /tmp/tracefs-look
  for f in current_tracer tracing_on tracing_thresh tracing_max_latency tracing_cpumask \
           hwlat_detector/width hwlat_detector/window hwlat_detector/mode buffer_size_kb set_event; do
    echo "$f: $(cat "/tmp/tracefs-look/$f" 2>&1 | tr '\n' ' ')"
  done >"$1"
  umount /tmp/tracefs-look
}
hwlat_snapshot hwlat-tracefs-before.txt
hwlat_stall=600
[ "$arch" = x86_64 ] && hwlat_stall=150 && lab_qmp nmi 5 300 1000
lab_qmp stall 5 $hwlat_stall 1700 2500 hwlat
lab_run hwlat 60 hwlat -a 1 -D 12s --window 1s --width 990ms --threshold 10us --json hwlat.json
hwlat_snapshot hwlat-tracefs-after.txt
mount -t tracefs nodev /tmp/tracefs-look
tracers=$(cat /tmp/tracefs-look/available_tracers)
umount /tmp/tracefs-look
has_tracer() { case " $tracers " in *" $1 "*) return 0 ;; esac; return 1; }
hwlat_sigs=""
has_tracer hwlat && hwlat_sigs="INT TERM"
for sig in $hwlat_sigs; do
  rtscope hwlat -a 1 -D 60s --json hwlat-sig$sig.json >hwlat-sig$sig.out 2>hwlat-sig$sig.err &
  pid=$!
  sleep 4
  kill -$sig "$pid"
  wait "$pid"
  echo $? >hwlat-sig$sig.rc
  hwlat_snapshot hwlat-tracefs-after-sig$sig.txt
  echo "@@LAB ran hwlat-sig$sig rc=$(cat hwlat-sig$sig.rc): rtscope hwlat -a 1 -D 60s, SIG$sig after 4 s"
  lab_checkpoint hwlat-sig$sig
done
# Someone else's tracer: refused, named, nothing changed. The block tracer
# (idle without blktrace set up): `function` slows a TCG guest to a crawl.
if has_tracer hwlat && has_tracer blk; then
  mount -t tracefs nodev /tmp/tracefs-look
  echo blk >/tmp/tracefs-look/current_tracer
  umount /tmp/tracefs-look
  lab_run hwlat-busy 30 hwlat -a 1 -D 2s
  mount -t tracefs nodev /tmp/tracefs-look
  echo nop >/tmp/tracefs-look/current_tracer
  umount /tmp/tracefs-look
  hwlat_snapshot hwlat-tracefs-after-busy.txt
fi
# check --measure: where the tracer is, its short hwlat run is attached to the
# hwlat row (with the noise and cyclic probes: 1 s each).
if has_tracer hwlat; then
  lab_run check-measure 90 check --measure --measure-time 1s --json check-measure.json
  hwlat_snapshot hwlat-tracefs-after-check.txt
fi
lab_run ipc 120 ipc -l 50 -i 2ms --json ipc.json

# Loads stopped by SIGINT in the middle of a run: the document is still
# written and every load process is reaped.
rtscope cyclic -D 60s -i 1ms --load cpu:50 --load mem-churn:30 --json sigint.json \
  >sigint.out 2>sigint.err &
pid=$!
sleep 4
ps >sigint-ps-during.txt
kill -INT "$pid"
wait "$pid"
echo $? >sigint.rc
sleep 1
ps >sigint-ps-after.txt
echo "@@LAB ran sigint rc=$(cat sigint.rc): rtscope cyclic -D 60s --load cpu:50 --load mem-churn:30, SIGINT after 4 s"
lab_checkpoint sigint

# The kernel's own referee, on PREEMPT_RT kernels: Debian's rtla timerlat and
# rtscope cyclic --trace, alternately, three times each, on the same CPU, period
# (1 ms) and priority (SCHED_FIFO 95). The host (bench/kernel-lab/referee, run
# by verify and by the lab's summary) holds rtscope's timer stage mean against
# rtla's IRQ latency average and timer + wakeup + sched against its thread
# latency average (the median of the rounds' ratios). rtla comes in with
# --files (bench/kernel-lab/rtla-files); without it the referee is skipped and referee-skipped.txt says why.
if [ "$(cat /sys/kernel/realtime 2>/dev/null)" = 1 ] || uname -v | grep -q PREEMPT_RT; then
  ref_cpu=1
  [ "$ncpu" -gt 1 ] || ref_cpu=0
  if [ ! -x /lab/files/rtla/run ]; then
    echo "no rtla in the guest (make a directory with bench/kernel-lab/rtla-files ARCH DIR and give the lab --files DIR)" \
      >referee-skipped.txt
    echo "@@LAB ran referee skipped: $(cat referee-skipped.txt)"
    lab_checkpoint referee
  else
    cat /lab/files/rtla/VERSION >referee-rtla-version.txt 2>/dev/null
    for round in 1 2 3; do
      # rtla (libtracefs) mounts tracefs when it is not: unmounted again after,
      # as the rest of the suite expects a fresh machine.
      mounted=$(grep -c ' /sys/kernel/tracing ' /proc/mounts)
      timeout 60 /lab/files/rtla/run timerlat top -q -n -c "$ref_cpu" -p 1000 -P f:95 -d 3s \
        >referee-rtla-$round.out 2>referee-rtla-$round.err
      echo $? >referee-rtla-$round.status
      [ "$mounted" = 0 ] && grep -q ' /sys/kernel/tracing ' /proc/mounts && umount /sys/kernel/tracing
      echo "@@LAB ran referee-rtla-$round exit $(cat referee-rtla-$round.status): rtla timerlat top -q -n -c $ref_cpu -p 1000 -P f:95 -d 3s"
      lab_checkpoint referee-rtla-$round
      lab_run referee-rtscope-$round 90 cyclic -a "$ref_cpu" -p 95 -i 1ms -D 3s --trace --json referee-rtscope-$round.json
    done
  fi
  # The qualification, shortened (`qualify --max 100us -D 10m` in the field):
  # check, the hwlat tracer, then cyclic under a load with outliers traced at
  # the deadline; a verdict (exit 0 PASS, 3 FAIL: under TCG the emulator's
  # figures fail it), its report and JUnit.
  lab_run qualify 240 qualify --max 100us -D 4s --cpus "$ref_cpu" --hwlat-duration 2s \
    --load cpu:30 --json qualify.json --junit qualify.xml --report qualify.html

  # Causes injected on purpose on the measured CPU, each under `cyclic
  # --trace-outliers` (SCHED_FIFO 95, 1 ms): verify counts the outliers each
  # made and how they were named (docs/kernels.md, "Injected causes"). Under
  # TCG the emulator alone makes outliers of a few ms (hundreds on ARM):
  # outliers are traced from 5 ms and every injection is far longer.
  # @@INJECT-BEGIN
  # The whole machine stopped by the host (qemu SIGSTOPped), as in the hwlat
  # case, 20 times for 150 ms on x86, 10 times for 600 ms on ARM (where the
  # emulator's own stalls reach 300 ms): hardware/hypervisor (the timer
  # late, no kernel event). A stall that falls inside the wake-up's own
  # handling rather than before it is seen as whatever ran then (unknown, at
  # best): hence many.
  if [ "$arch" = x86_64 ]; then
    lab_qmp stall 20 150 500 3000 inj-stall
  else
    lab_qmp stall 10 600 1300 3000 inj-stall
  fi
  lab_run inj-stall 60 cyclic -a "$ref_cpu" -p 95 -i 1ms -D 14s --trace-outliers 5ms --json inj-stall.json
  # A higher-priority real-time task: a SCHED_FIFO 99 load spinning 40 ms of
  # every 200 ms on the CPU (its own schedule, worker rtscope-cpu): that
  # task, by name and priority, outranking the thread.
  lab_run inj-hog 60 cyclic -a "$ref_cpu" -p 95 -i 1ms -D 10s --trace-outliers 5ms \
    --load cpu:100,policy=fifo,priority=99,every=200ms,for=40ms --load-cpus "$ref_cpu" --json inj-hog.json
  # RT throttling: a real-time priority 1 load that never sleeps on the same
  # CPU uses up sched_rt_runtime_us (950 ms of every second by default): for
  # the other 50 ms the real-time class is set aside, the measuring thread
  # with it. SCHED_RR, not FIFO: the RT kernel's per-CPU threads at FIFO 1
  # (ktimers/N, rcuc/N: timer-list and soft hrtimer expiry, RCU callbacks)
  # never run behind a FIFO 1 spinner of the same priority, and the guest
  # hung (a sleep armed on that CPU never ended); RR hands them the CPU at
  # the end of each 100 ms slice. A normal spinner beside it: from 6.12 the
  # real-time class is no longer throttled by itself; the fair deadline
  # server sets it aside for 50 ms a second only when a normal task starves.
  lab_run inj-throttle 60 cyclic -a "$ref_cpu" -p 95 -i 1ms -D 10s --trace-outliers 5ms \
    --load cpu:100,policy=rr,priority=1 --load cpu:100 --load-cpus "$ref_cpu" --json inj-throttle.json
  # Interrupts off in the kernel: the lab's module (bench/kernel-lab/irqoff,
  # built against this kernel's headers by irqoff-files and given with
  # --files) spins 20 ms with interrupts off on the measured CPU, 10 times,
  # for a shell pinned there, and keeps each section's start and end on
  # CLOCK_MONOTONIC (inj-irqoff-sections.txt) for verify. With preemptirq
  # tracepoints (--trace-irqs-off; bench/kernel-lab/build-kernel's kernel)
  # the sections are named interrupts off; without them (Debian's kernels
  # have none) it looks like a stall below the kernel with a task current:
  # unknown, never hardware/hypervisor.
  if [ -f /lab/files/irqoff/rtscope_irqoff.ko ]; then
    if insmod /lab/files/irqoff/rtscope_irqoff.ko 2>inj-irqoff-insmod.err; then
      (
        sleep 2
        i=0
        while [ $i -lt 10 ]; do
          taskset -c "$ref_cpu" sh -c 'echo 20000 >/proc/rtscope_irqoff'
          usleep 300000
          i=$((i + 1))
        done
      ) &
      irqoff_pid=$!
      lab_run inj-irqoff 60 cyclic -a "$ref_cpu" -p 95 -i 1ms -D 8s --trace-outliers 5ms --trace-irqs-off --json inj-irqoff.json
      wait "$irqoff_pid"
      cat /proc/rtscope_irqoff >inj-irqoff-sections.txt
      rmmod rtscope_irqoff
    else
      echo "insmod failed: $(cat inj-irqoff-insmod.err)" >inj-irqoff-skipped.txt
    fi
  else
    echo "no module (build one with bench/kernel-lab/irqoff-files and give the lab --files)" >inj-irqoff-skipped.txt
  fi
  [ -f inj-irqoff-skipped.txt ] && echo "@@LAB ran inj-irqoff skipped: $(cat inj-irqoff-skipped.txt)"
  lab_checkpoint inj-irqoff
  # An interrupt and softirq flood: the host floods the guest's NIC (lab
  # --nic) with frames for 8 s, its receive interrupt affine to the measured
  # CPU. On PREEMPT_RT the handler is a thread (irq/N-virtioM-input.0 or
  # irq/N-virtioM, SCHED_FIFO 50) that runs the NET_RX softirq's polls as
  # well: a measuring thread below it (-p 40, as an application thread
  # often is) waits for it, named as that task, outranking; above it (95),
  # as in the other cases, it would barely notice.
  if [ -d /sys/class/net/eth0 ]; then
    echo 1 >/proc/sys/net/ipv6/conf/eth0/disable_ipv6 2>/dev/null
    ip link set eth0 up
    nic_dev=$(basename "$(readlink /sys/class/net/eth0/device)")
    nic_irq=$(awk -v d="$nic_dev" '$NF == d "-input.0" || $NF == d {sub(":", "", $1); print $1; exit}' /proc/interrupts)
    if [ -n "$nic_irq" ] && echo "$ref_cpu" >"/proc/irq/$nic_irq/smp_affinity_list"; then
      grep -E "^ *$nic_irq:" /proc/interrupts >inj-flood-irq-before.txt
      lab_qmp flood 1 8000 0 1500 inj-flood
      lab_run inj-flood 60 cyclic -a "$ref_cpu" -p 40 -i 1ms -D 11s --trace-outliers 2ms --json inj-flood.json
      grep -E "^ *$nic_irq:" /proc/interrupts >inj-flood-irq-after.txt
      ps -o pid,comm,args 2>/dev/null | grep -E "irq/$nic_irq-" >inj-flood-thread.txt
    else
      echo "eth0 ($nic_dev) has no receive interrupt in /proc/interrupts to move to CPU $ref_cpu" >inj-flood-skipped.txt
    fi
  else
    echo "no NIC (boot the lab with --nic)" >inj-flood-skipped.txt
  fi
  [ -f inj-flood-skipped.txt ] && echo "@@LAB ran inj-flood skipped: $(cat inj-flood-skipped.txt)"
  lab_checkpoint inj-flood
  # @@INJECT-END
fi
