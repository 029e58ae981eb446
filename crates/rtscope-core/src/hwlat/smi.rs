//! The SMI counter: Intel CPUs count the System Management Interrupts each
//! logical CPU took in `MSR_SMI_COUNT` (0x34, bits 31:0), read through the
//! msr driver's `/dev/cpu/N/msr` (root with CAP_SYS_RAWIO; the `msr` module).
//!
//! SMIs are invisible to the kernel: the CPU leaves the OS for firmware and
//! comes back, and only the time it lost shows (a hwlat sample). The counter
//! says how many there were. Where it cannot be read (an AMD CPU, which counts
//! them only in a performance-counter event; ARM, which has no SMIs; no msr
//! driver; a hypervisor that refuses the MSR) the reason is given and the
//! count is unknown, never 0.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// The MSR that counts SMIs on Intel CPUs.
pub const MSR_SMI_COUNT: u64 = 0x34;

/// The `vendor_id` of `/proc/cpuinfo` (x86 only).
pub fn vendor(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == "vendor_id").then(|| v.trim().to_string())
    })
}

/// Why this CPU has no SMI counter to read, known before trying: `None` for
/// an Intel x86 CPU.
pub fn unsupported(arch: &str, vendor: Option<&str>) -> Option<String> {
    let x86 = matches!(arch, "x86_64" | "x86" | "i386" | "i486" | "i586" | "i686");
    if arch.is_empty() || arch == "unknown" {
        return Some("the CPU's architecture is unknown".into());
    }
    if !x86 {
        return Some(format!(
            "{arch} has no SMIs (they are x86's); firmware time shows only as samples"
        ));
    }
    match vendor {
        Some("GenuineIntel") => None,
        Some(v @ ("AuthenticAMD" | "HygonGenuine")) => Some(format!(
            "{v} CPU: MSR_SMI_COUNT (0x34) is Intel's; AMD counts SMIs only in a performance-counter event, which rtscope does not program"
        )),
        Some(v) => Some(format!("{v} CPU: MSR_SMI_COUNT (0x34) is Intel's")),
        None => Some("the CPU's vendor is unknown (no vendor_id in /proc/cpuinfo)".into()),
    }
}

/// Reads MSR `reg` through an msr device file (`/dev/cpu/N/msr`: the
/// register is the file offset, 8 bytes).
pub fn read_msr(dev: &Path, reg: u64) -> io::Result<u64> {
    let f = File::open(dev)?;
    let mut b = [0u8; 8];
    f.read_exact_at(&mut b, reg)?;
    Ok(u64::from_ne_bytes(b))
}

/// The device file of CPU `cpu`'s MSRs.
pub fn msr_device(cpu: usize) -> std::path::PathBuf {
    std::path::PathBuf::from(format!("/dev/cpu/{cpu}/msr"))
}

/// What an error reading the counter means, said for the result.
pub fn why(dev: &Path, e: &io::Error) -> String {
    let d = dev.display();
    match e.kind() {
        io::ErrorKind::NotFound => {
            format!("no {d} (the msr driver is not loaded: modprobe msr)")
        }
        io::ErrorKind::PermissionDenied => {
            format!("{d}: permission denied (root with CAP_SYS_RAWIO needed)")
        }
        _ if e.raw_os_error() == Some(libc::EIO) => format!(
            "{d}: reading MSR 0x34 was refused (EIO: a hypervisor that does not pass it through, or a CPU without it)"
        ),
        _ => format!("{d}: {e}"),
    }
}

/// Reads the counter of every CPU of `cpus` through `dev(cpu)`: all of
/// them, or the reason for the first that could not be read.
pub fn read_counts(
    cpus: &[usize],
    dev: impl Fn(usize) -> std::path::PathBuf,
) -> Result<Vec<u64>, String> {
    cpus.iter()
        .map(|&c| {
            let p = dev(c);
            read_msr(&p, MSR_SMI_COUNT)
                .map(|v| v & 0xffff_ffff)
                .map_err(|e| why(&p, &e))
        })
        .collect()
}

/// SMIs between two readings of the 32-bit counter (it wraps).
pub fn delta(before: u64, after: u64) -> u64 {
    after.wrapping_sub(before) & 0xffff_ffff
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vendor_decides() {
        let info = "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu\n";
        assert_eq!(vendor(info).as_deref(), Some("GenuineIntel"));
        assert_eq!(vendor("processor : 0\n"), None);
        assert_eq!(unsupported("x86_64", Some("GenuineIntel")), None);
        assert_eq!(unsupported("i686", Some("GenuineIntel")), None);
        let amd = unsupported("x86_64", Some("AuthenticAMD")).unwrap();
        assert!(
            amd.starts_with("AuthenticAMD CPU: MSR_SMI_COUNT (0x34) is Intel's; AMD"),
            "{amd}"
        );
        assert!(unsupported("x86_64", Some("HygonGenuine"))
            .unwrap()
            .contains("AMD counts"));
        assert_eq!(
            unsupported("x86_64", Some("CentaurHauls")).unwrap(),
            "CentaurHauls CPU: MSR_SMI_COUNT (0x34) is Intel's"
        );
        assert!(unsupported("x86_64", None)
            .unwrap()
            .contains("vendor is unknown"));
        assert_eq!(
            unsupported("unknown", None).unwrap(),
            "the CPU's architecture is unknown"
        );
        assert_eq!(
            unsupported("", None).unwrap(),
            "the CPU's architecture is unknown"
        );
        assert_eq!(
            unsupported("aarch64", Some("GenuineIntel")).unwrap(),
            "aarch64 has no SMIs (they are x86's); firmware time shows only as samples"
        );
    }

    #[test]
    fn the_register_is_the_offset() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("msr");
        let mut bytes = vec![0u8; 0x40];
        bytes[0x34..0x3c].copy_from_slice(&0x1_0000_0007u64.to_ne_bytes());
        std::fs::write(&p, &bytes).unwrap();
        assert_eq!(read_msr(&p, MSR_SMI_COUNT).unwrap(), 0x1_0000_0007);
        // The count is the low 32 bits.
        assert_eq!(read_counts(&[3, 5], |_| p.clone()).unwrap(), [7, 7]);
        // Past the end: an error, not a 0.
        assert!(read_msr(&p, 0x3c).is_err());
        let e = read_counts(&[0, 1], |c| {
            if c == 0 {
                p.clone()
            } else {
                d.path().join("none")
            }
        })
        .unwrap_err();
        assert!(e.starts_with("no ") && e.contains("modprobe msr"), "{e}");
    }

    #[test]
    fn errors_say_why() {
        let p = Path::new("/dev/cpu/3/msr");
        assert_eq!(msr_device(3), p);
        assert_eq!(
            why(p, &io::Error::from(io::ErrorKind::NotFound)),
            "no /dev/cpu/3/msr (the msr driver is not loaded: modprobe msr)"
        );
        assert!(why(p, &io::Error::from(io::ErrorKind::PermissionDenied)).contains("CAP_SYS_RAWIO"));
        assert!(why(p, &io::Error::from_raw_os_error(libc::EIO)).contains("was refused (EIO"));
        assert_eq!(
            why(p, &io::Error::from_raw_os_error(libc::ENXIO)),
            format!(
                "/dev/cpu/3/msr: {}",
                io::Error::from_raw_os_error(libc::ENXIO)
            )
        );
    }

    #[test]
    fn the_counter_wraps_at_32_bits() {
        assert_eq!(delta(5, 9), 4);
        assert_eq!(delta(0xffff_fffe, 1), 3);
        assert_eq!(delta(7, 7), 0);
    }
}
