// SPDX-License-Identifier: GPL-2.0
/*
 * rtscope_irqoff: interrupts off on request, for rtscope's kernel lab.
 *
 * Writing a number N to /proc/rtscope_irqoff disables interrupts on the
 * writer's CPU and spins N microseconds (at most 100000) before enabling
 * them again: a section of kernel code with interrupts off, injected on
 * purpose, that the cause diagnosis must not name as the hypervisor.
 * Reading the file gives how many sections ran, then the CLOCK_MONOTONIC
 * start and end (ns) and the CPU of the last 64, one line each, so that the
 * host can tell the injected outliers from the others by time.
 */
#include <linux/module.h>
#include <linux/proc_fs.h>
#include <linux/uaccess.h>
#include <linux/timekeeping.h>
#include <linux/irqflags.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/smp.h>
#include <linux/kernel.h>

#define MAX_US 100000
#define KEPT 64

struct section {
	u64 start, end;
	int cpu;
};

static DEFINE_MUTEX(lock);
static struct section kept[KEPT];
static u64 sections;

static ssize_t irqoff_write(struct file *f, const char __user *buf, size_t len,
			    loff_t *off)
{
	unsigned int us;
	unsigned long flags;
	u64 start, end;
	int cpu;
	int ret = kstrtouint_from_user(buf, len, 10, &us);

	if (ret)
		return ret;
	if (us == 0 || us > MAX_US)
		return -EINVAL;
	mutex_lock(&lock);
	local_irq_save(flags);
	start = ktime_get_mono_fast_ns();
	cpu = smp_processor_id();
	end = start + (u64)us * 1000;
	while (ktime_get_mono_fast_ns() < end)
		cpu_relax();
	end = ktime_get_mono_fast_ns();
	local_irq_restore(flags);
	kept[sections % KEPT] = (struct section){ start, end, cpu };
	sections++;
	mutex_unlock(&lock);
	return len;
}

static ssize_t irqoff_read(struct file *f, char __user *buf, size_t len,
			   loff_t *off)
{
	char *s;
	size_t n = 0, size = 64 + KEPT * 64;
	u64 i, first;
	ssize_t ret;

	s = kmalloc(size, GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	mutex_lock(&lock);
	n += scnprintf(s + n, size - n, "sections %llu\n", sections);
	first = sections > KEPT ? sections - KEPT : 0;
	for (i = first; i < sections; i++)
		n += scnprintf(s + n, size - n, "%llu %llu %d\n",
			       kept[i % KEPT].start, kept[i % KEPT].end,
			       kept[i % KEPT].cpu);
	mutex_unlock(&lock);
	ret = simple_read_from_buffer(buf, len, off, s, n);
	kfree(s);
	return ret;
}

static const struct proc_ops irqoff_ops = {
	.proc_write = irqoff_write,
	.proc_read = irqoff_read,
};

static struct proc_dir_entry *entry;

static int __init irqoff_init(void)
{
	entry = proc_create("rtscope_irqoff", 0600, NULL, &irqoff_ops);
	return entry ? 0 : -ENOMEM;
}

static void __exit irqoff_exit(void)
{
	proc_remove(entry);
}

module_init(irqoff_init);
module_exit(irqoff_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("interrupts off on request, for rtscope's kernel lab");
